// `dsgd run`: one algorithm of the catalog, natively, on threads (this process) or OpenMPI processes (dsgd-mpi
// under mpirun: dsgd links SimGrid, whose library defines MPI_* too). `dsgd algorithms` lists the algorithms.

#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/studies.hpp"
#include "app/commands.hpp"
#include "app/executors.hpp"
#include "app/run_common.hpp"

namespace dsgd::app {

namespace {

// The options of `dsgd run` and `dsgd study`: a training job and the executor to put it on.
struct RunCommand {
  TrainingJob job;
  std::string executor = "threads";
};

// Trains `job` on `executor` with `data` (loaded by the caller where the executor needs it here).
reports::Entry train(const Executor& executor, const TrainingJob& job, const algorithms::RunData* data,
                     Context& context) {
  TrainingJob run = job;
  run.data = data;
  return executor.train(run, context);
}

}  // namespace

void register_run_command(CLI::App& app, Context& context) {
  auto command = std::make_shared<RunCommand>();
  TrainingJob& job = command->job;
  job.cli.run.budget.target_accuracy = 0.85;
  job.progress = true;
  auto* run = app.add_subcommand("run", "Train with one algorithm of the catalog, natively (threads or MPI)");
  add_run_options(*run, job.cli);
  run->add_option("--executor", command->executor, "threads or mpi")->capture_default_str();
  run->add_option("--timeout", job.timeout_s, "Seconds a rank waits for another before failing")->capture_default_str();
  run->add_option("--wall-timeout", job.wall_timeout_s, "mpi: seconds before the whole run is stopped")
      ->capture_default_str();
  run->add_option("--results", job.cli.results, "Write the results (JSON) here");
  run->callback([&context, command] {
    const TrainingJob& job = command->job;
    const Executor& executor = find_executor(command->executor, training_executor_names());
    algorithms::check_run_options(job.cli.run);
    context.err << "run: " << job.cli.run.algorithm << ", " << job.cli.run.workers << " workers, " << job.cli.run.model
                << " on " << job.cli.dataset << ", " << executor.name << std::endl;
    const auto data = executor.needs_data_here ? load_run_data(job.cli) : algorithms::RunData{};
    const auto entry = train(executor, job, &data, context);
    auto results = new_results(context);
    results.benchmarks.push_back(entry);
    if (!job.cli.results.empty()) reports::write_results(job.cli.results, results);
    context.out << run_summary(job.cli, entry);
  });
}

void register_study_command(CLI::App& app, Context& context) {
  auto command = std::make_shared<RunCommand>();
  auto settings = std::make_shared<algorithms::StudySettings>();
  auto name = std::make_shared<std::string>();
  std::string names;
  for (const auto& study : algorithms::study_catalog()) names += (names.empty() ? "" : ", ") + study.name;
  auto* study = app.add_subcommand("study", "Run one of seed 000's comparisons (" + names + ")");
  study->add_option("name", *name, "The study: " + names)->required();
  study->add_option("--workers", settings->workers, "Workers (methods, easgd-variants, packing, batch-size)")
      ->capture_default_str();
  study->add_option("--seconds", settings->seconds, "Training time per run (methods)")->capture_default_str();
  study->add_option("--target-accuracy", settings->target_accuracy, "Accuracy each run trains to (easgd-variants)")
      ->capture_default_str();
  study->add_option("--iterations", settings->iterations, "Iterations per worker (packing, partition)")
      ->capture_default_str();
  study->add_option("--epochs", settings->epochs, "Passes over the training set at every batch size (batch-size)")
      ->capture_default_str();
  study
      ->add_option("--test-images", command->job.cli.test_images,
                   "Evaluate on at most the first this many test images (0: all)")
      ->capture_default_str();
  study->add_option("--data", command->job.cli.dataset, "fashion-mnist, idx:FOLDER or cifar10:FOLDER")
      ->capture_default_str();
  study->add_option("--executor", command->executor, "threads or mpi")->capture_default_str();
  study->add_option("--results", command->job.cli.results, "Write the results (JSON) here");
  command->job.command = "study";
  command->job.progress = true;
  command->job.record_divergence = true;
  study->callback([&context, command, settings, name] {
    const auto& chosen = algorithms::find_study(*name);
    const Executor& executor = find_executor(command->executor, training_executor_names());
    const auto data = executor.needs_data_here ? load_run_data(command->job.cli) : algorithms::RunData{};
    // Budgets in epochs need the training set's size; ranks in other processes load the data themselves.
    settings->train_images =
        static_cast<std::int64_t>(data.train ? data.train->size() : load_run_data(command->job.cli).train->size());
    const auto runs = chosen.runs(*settings);
    auto results = new_results(context);
    for (const auto& run : runs) {
      TrainingJob one = command->job;
      one.cli.run = run.options;
      algorithms::check_run_options(one.cli.run);
      context.err << "study " << chosen.name << ": " << run.label << std::endl;
      auto entry = train(executor, one, &data, context);
      entry.labels["study"] = chosen.name;
      entry.labels["run"] = run.label;
      for (const auto& [key, value] : run.labels) entry.labels[key] = value;
      context.out << run_summary(one.cli, entry);
      results.benchmarks.push_back(std::move(entry));
    }
    if (!command->job.cli.results.empty()) reports::write_results(command->job.cli.results, results);
  });
}

void register_algorithms_command(CLI::App& app, Context& context) {
  auto* command = app.add_subcommand("algorithms", "The SGD algorithms `dsgd run` knows, one line each");
  command->callback([&context] {
    for (const auto& entry : algorithms::algorithm_catalog()) {
      char line[300];
      std::snprintf(line, sizeof line, "%-15s %-8s %-13s %s\n", entry.info.name.c_str(),
                    entry.info.has_master ? "master" : "-", entry.info.synchronous ? "deterministic" : "asynchronous",
                    entry.info.description.c_str());
      context.out << line;
    }
  });
}

}  // namespace dsgd::app
