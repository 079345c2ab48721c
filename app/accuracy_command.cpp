// `dsgd accuracy`: time to accuracy in numeric simulation on one chip split into groups (seed 000 Fig 12) and the
// extrapolation check of the statistical-efficiency model (simulate/accuracy_study.hpp, docs/time-to-accuracy.md).

#include <cstdio>

#include "algorithms/studies.hpp"
#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "core/format.hpp"
#include "platforms/catalog.hpp"
#include "simulate/accuracy_entries.hpp"
#include "simulate/accuracy_study.hpp"

namespace dsgd::app {

namespace {

struct AccuracyCommand {
  RunCli cli;
  std::string platform = "cori-knl";
  simulate::AccuracyStudyOptions study;
};

void run_accuracy(Context& context, AccuracyCommand& command) {
  auto& study = command.study;
  study.run = command.cli.run;
  const auto platform = platforms::load_platform(command.platform);
  // Seed 000 Fig 12's published times to 62.5% for 1, 4, 8 and 16 groups of a KNL, shown beside.
  const auto& fig12 = algorithms::find_scaling_study("fig12");
  for (std::size_t i = 0; i < fig12.points.size(); ++i) {
    study.published_seconds.emplace_back(fig12.points[i].workers, fig12.cases.front().published_seconds.at(i));
  }
  study.progress = [&context](const std::string& line) { context.err << "accuracy: " << line << std::endl; };
  const auto data = load_run_data(command.cli);
  const auto outcome = simulate::run_accuracy_study(platform, study, data);

  auto results = new_results(context);
  results.benchmarks = simulate::to_entries(outcome, study, command.cli.dataset);
  context.out << format("%-7s %-6s %9s %10s %10s %8s %11s %11s %8s  %s\n", "groups", "batch", "reached", "iterations",
                        "sim s", "speedup", "model iter", "model s", "error", "model row");
  for (std::size_t i = 0; i < outcome.points.size(); ++i) {
    const auto& point = outcome.points[i];
    const auto& entry = results.benchmarks[i];
    const auto counter = [&](const char* key) {
      const auto found = entry.counters.find(key);
      return found == entry.counters.end() ? std::string("-") : significant(found->second, 4);
    };
    context.out << format(
        "%-7d %-6.0f %9s %10s %10s %8s %11s %11s %8s  %s\n", point.groups, entry.counters.at("global_batch"),
        point.reached ? "yes" : "no", counter("iterations_to_target").c_str(), counter("seconds_to_target").c_str(),
        counter("speedup").c_str(), counter("model_iterations").c_str(), counter("model_seconds").c_str(),
        counter("model_error_percent").c_str(), entry.labels.at("model_by").c_str());
  }
  if (outcome.model) {
    context.out << simulate::describe(*outcome.model) << "\n";
  } else {
    context.out << "no model: fewer than two fitted group counts reached the target\n";
  }
  if (!command.cli.results.empty()) reports::write_results(command.cli.results, results);
}

}  // namespace

void register_accuracy_command(CLI::App& app, Context& context) {
  auto command = std::make_shared<AccuracyCommand>();
  auto& run = command->cli.run;
  run.algorithm = "sync-sgd";
  run.budget.target_accuracy = 0.85;
  run.budget.iterations = 1500;
  run.budget.eval_every = 10;
  command->cli.test_images = 2000;
  auto* accuracy =
      app.add_subcommand("accuracy",
                         "Time to accuracy in numeric simulation: a chip split into groups (seed 000 Fig 12), and the "
                         "statistical-efficiency model fitted on the small group counts checked on the large ones");
  accuracy->add_option("--platform", command->platform, "Catalog name or platform file (one chip's cores are split)")
      ->capture_default_str();
  accuracy->add_option("--groups", command->study.groups, "Group counts, e.g. 1,2,4,8,16,32,64")
      ->delimiter(',')
      ->capture_default_str();
  accuracy->add_option("--fit-up-to", command->study.fit_up_to, "Fit the model on the group counts up to this")
      ->capture_default_str();
  accuracy->add_option("--algo", run.algorithm, "Algorithm (`dsgd algorithms`)")->capture_default_str();
  accuracy->add_option("--model", run.model, "Model of the zoo")->capture_default_str();
  accuracy->add_option("--data", command->cli.dataset, "fashion-mnist, idx:FOLDER or cifar10:FOLDER")
      ->capture_default_str();
  accuracy->add_option("--batch", run.hyper.batch, "Images per group per iteration")->capture_default_str();
  accuracy->add_option("--lr", run.hyper.learning_rate, "Learning rate")->capture_default_str();
  accuracy->add_option("--momentum", run.hyper.momentum, "Momentum")->capture_default_str();
  accuracy->add_option("--threads", run.threads_per_rank, "CPU threads of each group's kernels on this machine")
      ->capture_default_str();
  accuracy->add_option("--seed", run.hyper.seed, "Seed of the runs and the compute noise")->capture_default_str();
  accuracy->add_option("--target-accuracy", run.budget.target_accuracy, "Test accuracy to reach")
      ->capture_default_str();
  accuracy->add_option("--iterations", run.budget.iterations, "Cap of iterations per group")->capture_default_str();
  accuracy->add_option("--eval-every", run.budget.eval_every, "Iterations between evaluations (the resolution)")
      ->capture_default_str();
  accuracy->add_option("--test-images", command->cli.test_images, "Evaluate on at most this many test images")
      ->capture_default_str();
  accuracy->add_option("--results", command->cli.results, "Write the results (JSON) here")->check(output_file_check());
  accuracy->callback([&context, command] { run_accuracy(context, *command); });
}

}  // namespace dsgd::app
