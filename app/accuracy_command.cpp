// `dsgd accuracy`: time to accuracy in numeric simulation on one chip split into groups (seed 000 Fig 12) and the
// extrapolation check of the statistical-efficiency model (simulate/accuracy_study.hpp, docs/time-to-accuracy.md).

#include <cstdio>

#include "algorithms/studies.hpp"
#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "core/format.hpp"
#include "platforms/catalog.hpp"
#include "simulate/accuracy_study.hpp"

namespace dsgd::app {

namespace {

struct AccuracyCommand {
  RunCli cli;
  std::string platform = "cori-knl";
  simulate::AccuracyStudyOptions study;
};

reports::Entry point_entry(const AccuracyCommand& command, const simulate::AccuracyStudy& study,
                           const simulate::AccuracyPoint& point) {
  const auto& run = command.cli.run;
  auto entry = reports::timed_entry("accuracy/" + std::to_string(point.groups) + "groups", "simgrid", "message",
                                    run.algorithm, point.groups, point.reached ? point.seconds_to_target : 0);
  entry.platform = study.platform;
  entry.model = run.model;
  entry.dataset = command.cli.dataset;
  entry.seed = run.hyper.seed;
  entry.labels["kind"] = "point";
  entry.labels["groups"] = std::to_string(point.groups) + (point.groups == 1 ? " group" : " groups");
  entry.labels["reached"] = point.reached ? "yes" : "no";
  entry.labels["numeric_by"] = "predicted (numeric simulation)";
  entry.labels["model_by"] = point.in_fit ? "FITTED (in the fit)" : "predicted (model extrapolated)";
  entry.counters["groups"] = point.groups;
  entry.counters["cores_per_group"] = point.cores_per_group;
  entry.counters["global_batch"] = static_cast<double>(point.groups) * run.hyper.batch;
  entry.counters["final_accuracy"] = point.final_accuracy;
  entry.counters["seconds_per_iteration"] = point.seconds_per_iteration;
  entry.counters["wall_s"] = point.wall_s;
  if (point.reached) {
    entry.counters["iterations_to_target"] = point.iterations_to_target;
    entry.counters["seconds_to_target"] = point.seconds_to_target;
    const auto& first = study.points.front();
    if (first.reached && first.groups == 1)
      entry.counters["speedup"] = first.seconds_to_target / point.seconds_to_target;
  }
  if (point.published_seconds) {
    entry.counters["published_seconds"] = *point.published_seconds;
    for (const auto& other : study.points) {
      if (other.groups == 1 && other.published_seconds) {
        entry.counters["published_speedup"] = *other.published_seconds / *point.published_seconds;
      }
    }
  }
  if (point.predicted) {
    entry.counters["model_iterations"] = point.predicted->updates;
    entry.counters["model_seconds"] = point.predicted_seconds;
    entry.counters["size_only_seconds_per_iteration"] = point.size_only_seconds_per_iteration;
    if (point.reached) {
      entry.counters["model_error_percent"] = 100 * (point.predicted->updates / point.iterations_to_target - 1);
      entry.counters["model_seconds_error_percent"] = 100 * (point.predicted_seconds / point.seconds_to_target - 1);
    }
  }
  reports::Curve accuracy{"test_accuracy", "time_s", "accuracy", {}};
  for (const auto& p : point.curve) accuracy.points.emplace_back(p.seconds, p.test_accuracy);
  entry.curves.push_back(std::move(accuracy));
  return entry;
}

reports::Entry fitted_entry(const simulate::AccuracyStudy& study, const std::string& name, double value,
                            const std::string& fitted_on) {
  reports::Entry entry;
  entry.name = "accuracy/fitted/" + name;
  entry.executor = "simgrid";
  entry.platform = study.platform;
  entry.labels["kind"] = "fitted";
  entry.labels["parameter"] = "FITTED " + name;
  entry.labels["fitted_on"] = fitted_on;
  entry.counters["value"] = value;
  return entry;
}

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
  context.out << format("%-7s %-6s %9s %10s %10s %8s %11s %11s %8s  %s\n", "groups", "batch", "reached", "iterations",
                        "sim s", "speedup", "model iter", "model s", "error", "model row");
  for (const auto& point : outcome.points) {
    auto entry = point_entry(command, outcome, point);
    const auto counter = [&](const char* key) {
      const auto found = entry.counters.find(key);
      return found == entry.counters.end() ? std::string("-") : significant(found->second, 4);
    };
    context.out << format(
        "%-7d %-6.0f %9s %10s %10s %8s %11s %11s %8s  %s\n", point.groups, entry.counters.at("global_batch"),
        point.reached ? "yes" : "no", counter("iterations_to_target").c_str(), counter("seconds_to_target").c_str(),
        counter("speedup").c_str(), counter("model_iterations").c_str(), counter("model_seconds").c_str(),
        counter("model_error_percent").c_str(), entry.labels.at("model_by").c_str());
    results.benchmarks.push_back(std::move(entry));
  }
  if (outcome.model) {
    context.out << simulate::describe(*outcome.model) << "\n";
    const std::string on = "groups up to " + std::to_string(study.fit_up_to);
    results.benchmarks.push_back(fitted_entry(outcome, "S_min", outcome.model->s_min_updates, on));
    results.benchmarks.push_back(fitted_entry(outcome, "B_noise", outcome.model->b_noise_examples, on));
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
