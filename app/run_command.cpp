// `dsgd run`: one algorithm of the catalog, natively, on threads (this process) or OpenMPI processes (dsgd-mpi
// under mpirun: dsgd links SimGrid, whose library defines MPI_* too). `dsgd algorithms` lists the algorithms.

#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/studies.hpp"
#include "app/commands.hpp"
#include "app/mpi_worker.hpp"
#include "app/run_common.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/threads/executor.hpp"

namespace dsgd::app {

namespace {

struct RunCommand {
  RunCli cli;
  std::string executor = "threads";
  double timeout_s = 120;         // for any wait of a rank for another
  double wall_timeout_s = 3600;   // for the whole MPI run
};

// With `record_divergence`, a run whose loss diverges becomes an entry (stop reason "diverged", the curve up to
// then) instead of an error: a study that runs every algorithm with the same settings reports it.
reports::Entry run_threads(const RunCommand& command, const algorithms::RunData& data, Context& context,
                           bool record_divergence = false) {
  algorithms::RunResult result;
  WorldOptions world;
  world.size = algorithms::world_size(command.cli.run);
  world.timeout_s = command.timeout_s;
  auto worker = algorithms::training_worker(command.cli.run, data, &result,
                                            [&](const algorithms::RunPoint& point) {
                                              context.err << progress_line(point) << std::flush;
                                            });
  try {
    measure::threads::run(world, worker);
  } catch (const algorithms::DivergedError& error) {
    if (!record_divergence) throw;
    context.err << "run: " << error.what() << std::endl;
    result.stop_reason = "diverged";
  }
  return run_entry(command.cli, result, "threads");
}

reports::Entry run_mpi(const RunCommand& command, Context& context) {
  WorkerLaunch launch;
  launch.command = "run";
  launch.what = "dsgd-mpi run";
  launch.ranks = algorithms::world_size(command.cli.run);
  launch.program = {measure::mpi::worker_executable().string(), "--timeout", std::to_string(command.timeout_s), "run"};
  for (const auto& argument : run_arguments(command.cli)) launch.program.push_back(argument);
  launch.timeout_s = command.wall_timeout_s;
  const auto outcome = run_worker(launch, context);
  context.err << outcome.output;  // rank 0's progress lines
  if (outcome.results.benchmarks.size() != 1) throw InternalError("run: dsgd-mpi wrote no run result");
  return outcome.results.benchmarks.front();
}

}  // namespace

void register_run_command(CLI::App& app, Context& context) {
  auto command = std::make_shared<RunCommand>();
  command->cli.run.budget.target_accuracy = 0.85;
  auto* run = app.add_subcommand("run", "Train with one algorithm of the catalog, natively (threads or MPI)");
  add_run_options(*run, command->cli);
  run->add_option("--executor", command->executor, "threads or mpi")->capture_default_str();
  run->add_option("--timeout", command->timeout_s, "Seconds a rank waits for another before failing")
      ->capture_default_str();
  run->add_option("--wall-timeout", command->wall_timeout_s, "mpi: seconds before the whole run is stopped")
      ->capture_default_str();
  run->add_option("--results", command->cli.results, "Write the results (JSON) here");
  run->callback([&context, command] {
    const std::vector<std::string> executors = {"threads", "mpi"};
    if (std::find(executors.begin(), executors.end(), command->executor) == executors.end()) {
      throw UnknownNameError("executor", command->executor, executors);
    }
    algorithms::check_run_options(command->cli.run);
    context.err << "run: " << command->cli.run.algorithm << ", " << command->cli.run.workers << " workers, "
                << command->cli.run.model << " on " << command->cli.dataset << ", " << command->executor << std::endl;
    const auto entry = command->executor == "mpi" ? run_mpi(*command, context)
                                                   : run_threads(*command, load_run_data(command->cli), context);
    auto results = new_results(context);
    results.benchmarks.push_back(entry);
    if (!command->cli.results.empty()) reports::write_results(command->cli.results, results);
    context.out << run_summary(command->cli, entry);
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
  study->add_option("--workers", settings->workers, "Workers (methods, easgd-variants, packing)")->capture_default_str();
  study->add_option("--seconds", settings->seconds, "Training time per run (methods)")->capture_default_str();
  study->add_option("--target-accuracy", settings->target_accuracy, "Accuracy each run trains to (easgd-variants)")
      ->capture_default_str();
  study->add_option("--iterations", settings->iterations, "Iterations per worker (packing, partition)")
      ->capture_default_str();
  study->add_option("--data", command->cli.dataset, "fashion-mnist, idx:FOLDER or cifar10:FOLDER")
      ->capture_default_str();
  study->add_option("--executor", command->executor, "threads or mpi")->capture_default_str();
  study->add_option("--results", command->cli.results, "Write the results (JSON) here");
  study->callback([&context, command, settings, name] {
    const auto& chosen = algorithms::find_study(*name);
    const auto runs = chosen.runs(*settings);
    const auto data = command->executor == "mpi" ? algorithms::RunData{} : load_run_data(command->cli);
    auto results = new_results(context);
    for (const auto& run : runs) {
      RunCommand one = *command;
      one.cli.run = run.options;
      algorithms::check_run_options(one.cli.run);
      context.err << "study " << chosen.name << ": " << run.label << std::endl;
      auto entry = command->executor == "mpi" ? run_mpi(one, context)
                                              : run_threads(one, data, context, /*record_divergence=*/true);
      entry.labels["study"] = chosen.name;
      entry.labels["run"] = run.label;
      context.out << run_summary(one.cli, entry);
      results.benchmarks.push_back(std::move(entry));
    }
    if (!command->cli.results.empty()) reports::write_results(command->cli.results, results);
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
