// `dsgd lasso`: seed 003's STRADS Lasso (algorithms/strads/; docs/strads.md) with one or more schedulers, on
// threads, under mpirun, or in SimGrid (a numeric simulation: the real updates, the platform's clock); each run also
// gets the time and rounds it took to come within --gap of the best objective any of the runs reached, and its
// speed-up over the serial and shotgun runs to the objective each of those ended with.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "algorithms/strads/lasso_entry.hpp"
#include "app/commands.hpp"
#include "app/executors.hpp"
#include "app/lasso_cli.hpp"
#include "app/mpi_worker.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "simulate/study_entries.hpp"

namespace dsgd::app {

namespace {

namespace strads = algorithms::strads;

struct LassoCommandCli {
  LassoCli lasso;
  std::vector<std::string> schedulers = {"strads-dynamic"};
  std::string executor = "threads";
  int workers = 2;
  double gap = 1e-3;
  std::string platform;    // simgrid
  int ranks_per_node = 1;  // simgrid
  std::string write_problem;
  std::string results;
  double timeout_s = 600;
  measure::mpi::MpiLaunchOptions launcher;
};

reports::Entry run_on_threads(const LassoCli& cli, const strads::LassoProblem& problem, int workers, double timeout_s) {
  strads::LassoRunResult kept;
  WorldOptions world;
  world.size = workers;
  world.timeout_s = timeout_s;
  measure::threads::run(world, [&](Comm& comm) {
    auto result = strads::run_lasso(comm, problem, cli.run);
    if (comm.rank() == 0) kept = std::move(result);
  });
  return strads::to_entry(cli.run, problem, kept, "threads", workers);
}

reports::Entry run_under_mpirun(const LassoCommandCli& cli, const std::string& scheduler, Context& context) {
  WorkerLaunch launch;
  launch.command = "lasso";
  launch.what = "dsgd-mpi lasso";
  launch.ranks = cli.workers;
  launch.launcher = cli.launcher;
  launch.program = {measure::mpi::worker_executable().string(), "--timeout", std::to_string(cli.timeout_s), "lasso"};
  const auto arguments = lasso_arguments(cli.lasso, scheduler, cli.workers);
  launch.program.insert(launch.program.end(), arguments.begin(), arguments.end());
  launch.timeout_s = cli.timeout_s;
  auto outcome = run_worker(launch, context);
  if (outcome.results.benchmarks.size() != 1) {
    throw Error("lasso: dsgd-mpi lasso wrote " + std::to_string(outcome.results.benchmarks.size()) +
                " results entries, not 1");
  }
  return outcome.results.benchmarks.front();
}

// A numeric simulation: the real problem and updates, every compute step and message on the platform's clock (the
// dynamic scheduler's graph included, as rank 0's compute). The entry comes back from SimGrid's child process as
// JSON.
reports::Entry run_in_simgrid(const LassoCommandCli& cli, const LassoCli& one, const strads::LassoProblem& problem,
                              Context& context) {
  const auto platform = platforms::load_platform(cli.platform);
  WorldOptions world;
  world.size = cli.workers;
  world.timeout_s = cli.timeout_s;
  simulate::SimulationOptions simulation;
  simulation.placement.ranks_per_node = cli.ranks_per_node;
  strads::LassoRunResult kept;
  simulation.collect = [&] {
    auto results = new_results(context);
    results.benchmarks.push_back(strads::to_entry(one.run, problem, kept, "simgrid", cli.workers));
    return reports::to_json(results).dump();
  };
  const auto simulated = simulate::simgrid::run(
      platform, world,
      [&](Comm& comm) {
        auto result = strads::run_lasso(comm, problem, one.run);
        if (comm.rank() == 0) kept = std::move(result);
      },
      simulation);
  auto entry =
      reports::results_from_json(parse_json(simulated.collected, "the simulation"), "the simulation").benchmarks.at(0);
  simulate::add_simulation(entry, simulated, platform.name);
  return entry;
}

void lasso(Context& context, LassoCommandCli cli) {
  static const std::vector<std::string> accepted = {"threads", "mpi", "simgrid"};
  const Executor& executor = find_executor(cli.executor, accepted);
  if (executor.kind == ExecutorKind::kSimgrid && cli.platform.empty()) {
    throw InputError("lasso: --executor simgrid needs --platform (a catalog name or a platform file)");
  }
  if (cli.schedulers.empty()) throw InputError("lasso: --scheduler names no scheduler");
  for (const auto& name : cli.schedulers) strads::scheduler_from_string(name);  // UnknownNameError before any run
  if (!(cli.gap > 0)) throw InputError("lasso: --gap must be > 0");
  const auto problem = strads::load_lasso(cli.lasso.problem);
  if (!cli.write_problem.empty()) {
    strads::write_lasso_libsvm(problem, cli.write_problem);
    context.out << "lasso: wrote " << problem.name << " (" << problem.rows << " rows, " << problem.features
                << " features, " << problem.nnz() << " non-zeros) to " << cli.write_problem << "\n";
    return;
  }
  if (executor.kind == ExecutorKind::kMpi) measure::mpi::check_launch(cli.launcher, cli.workers);
  // Every scheduler's options are checked before the first run starts.
  std::vector<LassoCli> resolved;
  for (const auto& scheduler : cli.schedulers) {
    resolved.push_back(cli.lasso);
    resolve_lasso_cli(resolved.back(), scheduler, cli.workers, problem);
  }
  auto results = new_results(context);
  for (std::size_t k = 0; k < cli.schedulers.size(); ++k) {
    const std::string& scheduler = cli.schedulers[k];
    const LassoCli& one = resolved[k];
    auto entry = executor.kind == ExecutorKind::kMpi       ? run_under_mpirun(cli, scheduler, context)
                 : executor.kind == ExecutorKind::kSimgrid ? run_in_simgrid(cli, one, problem, context)
                                                           : run_on_threads(one, problem, cli.workers, cli.timeout_s);
    char line[400];
    std::snprintf(line, sizeof line,
                  "%s, %d workers on %s, %s (lambda %.4g): objective %.9g after %lld rounds (%.0f updates), %.2f s; "
                  "stopped by %s\n",
                  scheduler.c_str(), cli.workers, cli.executor.c_str(), problem.name.c_str(),
                  entry.counters.at("lambda"), entry.counters.at("objective"), static_cast<long long>(entry.iterations),
                  entry.counters.at("updates"), entry.real_time, entry.labels.at("stop_reason").c_str());
    context.out << line << std::flush;
    results.benchmarks.push_back(std::move(entry));
  }
  strads::compare_runs(results.benchmarks, cli.gap);
  const double best = results.benchmarks.front().counters.at("best_objective_of_runs");
  for (const auto& entry : results.benchmarks) {
    const auto seconds = entry.counters.find("time_to_gap_s");
    context.out << "  " << entry.algorithm << ": within " << cli.gap << " of the best objective (" << best << ") "
                << (seconds != entry.counters.end() ? "after " + std::to_string(seconds->second) + " s, " +
                                                          std::to_string(entry.counters.at("rounds_to_gap")) + " rounds"
                                                    : std::string("never"))
                << "\n";
  }
  if (!cli.results.empty()) reports::write_results(cli.results, results);
}

}  // namespace

void register_lasso_command(CLI::App& app, Context& context) {
  auto cli = std::make_shared<LassoCommandCli>();
  auto* command =
      app.add_subcommand("lasso",
                         "Seed 003's STRADS: Lasso by scheduled coordinate descent (serial, shotgun, strads-static, "
                         "strads-dynamic) on threads, MPI or in SimGrid");
  command
      ->add_option("--scheduler", cli->schedulers, "serial, shotgun, strads-static, strads-dynamic (a list runs each)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--executor", cli->executor, "threads, mpi or simgrid (a numeric simulation on --platform)")
      ->capture_default_str();
  command->add_option("--platform", cli->platform, "simgrid: catalog name or platform file");
  command->add_option("--ranks-per-node", cli->ranks_per_node, "simgrid: workers per node of the platform")
      ->capture_default_str();
  command->add_option("--workers", cli->workers, "Workers (ranks); rank 0 also schedules and aggregates")
      ->capture_default_str();
  add_lasso_options(*command, cli->lasso);
  command->add_option("--gap", cli->gap, "Relative gap to the best objective of the runs for time_to_gap_s")
      ->capture_default_str();
  command
      ->add_option("--write-problem", cli->write_problem,
                   "Write the problem as a LIBSVM regression file and stop (for scripts/lasso_reference.py)")
      ->check(output_file_check());
  command->add_option("--results", cli->results, "Write the results (JSON) here")->check(output_file_check());
  command->add_option("--timeout", cli->timeout_s, "Seconds before a wait gives up")->capture_default_str();
  add_launch_options(*command, cli->launcher);
  command->callback([&context, cli] { lasso(context, *cli); });
}

}  // namespace dsgd::app
