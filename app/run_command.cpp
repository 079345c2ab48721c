// `dsgd run`: one algorithm of the catalog, natively on threads (this process) or OpenMPI processes (dsgd-mpi
// under mpirun: dsgd links SimGrid, whose library defines MPI_* too), or in a numeric simulation on a platform
// (--executor simgrid --platform P: real gradients, simulated time; simulate/numeric.hpp). `dsgd algorithms`
// lists the algorithms.

#include "algorithms/algorithm.hpp"
#include "algorithms/run_checkpoint.hpp"
#include "algorithms/study_runner.hpp"
#include "app/commands.hpp"
#include "app/executors.hpp"
#include "app/mpi_worker.hpp"
#include "app/run_common.hpp"
#include "core/atomic_file.hpp"
#include "core/format.hpp"

namespace dsgd::app {

namespace {

// The options of `dsgd run` and `dsgd study`: a training job and the executor to put it on.
struct RunCommand {
  TrainingJob job;
  std::string executor = "threads";
};

constexpr const char* kExecutorHelp = "threads, mpi or simgrid (a numeric simulation on --platform)";
constexpr const char* kRanksPerNodeHelp =
    "Ranks per node: simgrid places them so (0: one per compute unit); threads and mpi group the ranks into nodes of "
    "this many for the hierarchical allreduces (0: threads one node, mpi the real nodes)";

void add_platform_options(CLI::App& command, TrainingJob& job) {
  command.add_option("--platform", job.platform, "simgrid: the simulated platform (catalog name or file)");
  command.add_option("--kernel-profile", job.kernel_profile,
                     "simgrid: measured per-layer kernel times (`dsgd calibrate --layers`) pricing the kernels they "
                     "cover on the platform");
  command.add_option("--ranks-per-node", job.ranks_per_node, kRanksPerNodeHelp)->capture_default_str();
  command
      .add_option("--simulation-threads", job.simulation_threads,
                  "simgrid: threads of this machine computing the ranks' gradients side by side (0: one per "
                  "processor; the weights are the same for every count)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

// Trains `job` on `executor` with `data` (loaded by the caller where the executor needs it here).
reports::Entry train(const Executor& executor, const TrainingJob& job, const algorithms::RunData* data,
                     Context& context) {
  if (!job.kernel_profile.empty() && executor.kind != ExecutorKind::kSimgrid) {
    throw InputError(job.command + ": --kernel-profile prices a simulation's kernels; use it with --executor simgrid");
  }
  if (job.simulation_threads != 0 && executor.kind != ExecutorKind::kSimgrid) {
    throw InputError(job.command +
                     ": --simulation-threads computes a simulation's ranks side by side; use it with "
                     "--executor simgrid (--threads sets the kernels' threads)");
  }
  TrainingJob run = job;
  run.data = data;
  return executor.train(run, context);
}

// After an interrupt stopped a run: writes `results` (marked interrupted) to `path` where one is set and throws
// InterruptedError saying how far the work got. Returns where nothing was interrupted.
void stop_if_interrupted(const Context& context, reports::Results& results, const std::string& path,
                         const std::string& progress) {
  if (context.interrupt == nullptr || !context.interrupt->requested()) return;
  results.interrupted = true;
  if (!path.empty()) reports::write_results(path, results);
  throw InterruptedError(
      context.interrupt->signal(),
      "stopped " + progress + (path.empty() ? "" : "; the results so far are in " + path + ", marked interrupted"));
}

}  // namespace

void register_run_command(CLI::App& app, Context& context) {
  auto command = std::make_shared<RunCommand>();
  TrainingJob& job = command->job;
  job.cli.run.budget.target_accuracy = 0.85;
  job.progress = true;
  job.keep_interrupted = true;  // written, marked interrupted
  auto* run = app.add_subcommand(
      "run", "Train with one algorithm of the catalog: natively (threads, MPI) or simulated with real gradients");
  add_run_options(*run, job.cli);
  run->add_option("--executor", command->executor, kExecutorHelp)->capture_default_str();
  add_platform_options(*run, job);
  run->add_option("--timeout", job.timeout_s, "Seconds a rank waits for another before failing (simgrid: simulated)")
      ->capture_default_str();
  run->add_option("--wall-timeout", job.wall_timeout_s, "mpi, simgrid: seconds before the whole run is stopped")
      ->capture_default_str();
  run->add_option("--results", job.cli.results, "Write the results (JSON) here")->check(output_file_check());
  add_launch_options(*run, job.launcher);
  run->callback([&context, command] {
    const TrainingJob& training = command->job;
    const Executor& executor = find_executor(command->executor, training_executor_names());
    algorithms::check_run_options(training.cli.run);
    check_distinct_outputs({{"--checkpoint", training.cli.run.checkpoint.path}, {"--results", training.cli.results}});
    check_backend(executor.kind, training);
    if (executor.kind == ExecutorKind::kMpi) {
      measure::mpi::check_launch(training.launcher, algorithms::world_size(training.cli.run));
    }
    note_resume("run", training.cli.run.checkpoint, algorithms::check_resume(training.cli.run), context.err);
    context.err << "run: " << training.cli.run.algorithm << ", " << training.cli.run.workers << " workers, "
                << training.cli.run.model << " on " << training.cli.dataset << ", " << executor.name << std::endl;
    const auto data = executor.needs_data_here ? load_run_data(training.cli) : algorithms::RunData{};
    const auto entry = train(executor, training, &data, context);
    auto results = new_results(context);
    results.benchmarks.push_back(entry);
    stop_if_interrupted(context, results, training.cli.results,
                        "training after " + std::to_string(entry.iterations) + " iterations per worker");
    if (!training.cli.results.empty()) reports::write_results(training.cli.results, results);
    context.out << run_summary(training.cli, entry);
  });
}

namespace {

// `dsgd study`'s options beyond a training job: the configurations to run every study run on, overrides of the
// runs' settings, and a learning-rate sweep.
struct StudyCommand {
  RunCommand run;
  algorithms::StudySettings settings;
  std::string name;
  std::vector<int> workers = {4};
  std::vector<std::string> platforms;  // simgrid: one configuration per platform
  std::vector<float> lr_sweep;         // rates tried per run at the first configuration
  int batch = 0;                       // 0: the study's
  std::int64_t budget_iterations = 0;  // 0: the study's budget
  std::int64_t eval_every = 0;         // 0: the study's
  int threads = 0;                     // 0: the study's CPU threads per rank
  float momentum = -1;                 // < 0: the study's
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::kRing;
  CLI::Option* allreduce_option = nullptr;  // given: every run's allreduce instead of the study's
};

// A study run with the command's overrides.
algorithms::RunOptions overridden(const StudyCommand& command, algorithms::RunOptions options) {
  if (command.batch > 0) options.hyper.batch = command.batch;
  if (command.eval_every > 0) options.budget.eval_every = command.eval_every;
  if (command.threads > 0) options.threads_per_rank = command.threads;
  if (command.momentum >= 0) options.hyper.momentum = command.momentum;
  if (command.allreduce_option != nullptr && command.allreduce_option->count() > 0) {
    options.hyper.allreduce = command.allreduce;
  }
  if (command.budget_iterations > 0) {
    options.budget.iterations = command.budget_iterations;
    options.budget.seconds = 0;
  }
  return options;
}

void run_study(Context& context, StudyCommand& command) {
  const auto& chosen = algorithms::find_study(command.name);
  const Executor& executor = find_executor(command.run.executor, training_executor_names());
  if (command.workers.empty()) throw InputError("study: --workers lists none");
  algorithms::StudyPlan plan;
  plan.workers = command.workers;
  if (!command.platforms.empty()) plan.platforms = command.platforms;
  plan.lr_sweep = command.lr_sweep;
  plan.overridden = [&command](algorithms::RunOptions options) { return overridden(command, std::move(options)); };
  const auto data = executor.needs_data_here ? load_run_data(command.run.job.cli) : algorithms::RunData{};
  // Budgets in epochs need the training set's size; ranks in other processes load the data themselves.
  command.settings.train_images =
      static_cast<std::int64_t>(data.train ? data.train->size() : load_run_data(command.run.job.cli).train->size());
  auto results = new_results(context);
  const auto train_one = [&](const algorithms::RunOptions& options, const std::string& platform,
                             const std::string& label, const std::string& phase) {
    TrainingJob one = command.run.job;
    one.cli.run = options;
    one.platform = platform;
    algorithms::check_run_options(one.cli.run);
    context.err << "study " << chosen.name << ": " << label << ", " << options.workers << " workers"
                << (platform.empty() ? "" : " on " + platform) << ", lr " << significant(options.hyper.learning_rate, 6)
                << (phase.empty() ? "" : " (" + phase + ")") << std::endl;
    auto entry = train(executor, one, &data, context);
    if (entry.labels.count("stop_reason") > 0 && entry.labels.at("stop_reason") == "interrupted") {
      results.benchmarks.push_back(entry);
      stop_if_interrupted(context, results, command.run.job.cli.results,
                          "study " + chosen.name + " in run " + label + " after " + std::to_string(entry.iterations) +
                              " iterations per worker");
    }
    context.out << run_summary(one.cli, entry);
    return entry;
  };
  algorithms::run_study(
      chosen, command.settings, plan, train_one,
      [&results](reports::Entry entry) { results.benchmarks.push_back(std::move(entry)); }, context.err);
  if (!command.run.job.cli.results.empty()) reports::write_results(command.run.job.cli.results, results);
}

}  // namespace

void register_study_command(CLI::App& app, Context& context) {
  auto command = std::make_shared<StudyCommand>();
  auto& settings = command->settings;
  std::string names;
  for (const auto& study : algorithms::study_catalog()) names += (names.empty() ? "" : ", ") + study.name;
  auto* study = app.add_subcommand("study", "Run one of seed 000's comparisons (" + names + ")");
  study->add_option("name", command->name, "The study: " + names)->required();
  study
      ->add_option("--workers", command->workers,
                   "Workers (methods, easgd-variants, packing, batch-size); a list runs each")
      ->delimiter(',')
      ->capture_default_str();
  study->add_option("--seconds", settings.seconds, "Training time per run (methods)")->capture_default_str();
  study->add_option("--target-accuracy", settings.target_accuracy, "Accuracy each run trains to (easgd-variants)")
      ->capture_default_str();
  study->add_option("--iterations", settings.iterations, "Iterations per worker (packing, partition)")
      ->capture_default_str();
  study->add_option("--epochs", settings.epochs, "Passes over the training set at every batch size (batch-size)")
      ->capture_default_str();
  study->add_option("--budget-iterations", command->budget_iterations,
                    "Every run's budget in iterations per worker instead of the study's (simgrid: the same work on "
                    "every platform)");
  study->add_option("--batch", command->batch, "Every run's batch per worker instead of the study's");
  study->add_option("--eval-every", command->eval_every, "Every run's iterations between evaluations");
  study->add_option("--threads", command->threads, "Every run's CPU threads per rank (simgrid: for the kernels)");
  study->add_option("--momentum", command->momentum, "Every run's momentum mu instead of the study's");
  study->add_option("--test-images", command->run.job.cli.test_images, "Evaluate on at most this many test images")
      ->capture_default_str();
  study
      ->add_option("--lr-sweep", command->lr_sweep,
                   "Learning rates tried for every run at the first configuration; each run then uses its best "
                   "(highest final accuracy, not diverged) everywhere")
      ->delimiter(',');
  study->add_option("--data", command->run.job.cli.dataset, "fashion-mnist, idx:FOLDER or cifar10:FOLDER")
      ->capture_default_str();
  study->add_option("--executor", command->run.executor, kExecutorHelp)->capture_default_str();
  study->add_option("--platform", command->platforms, "simgrid: platforms (catalog names or files); a list runs each")
      ->delimiter(',');
  study->add_option("--ranks-per-node", command->run.job.ranks_per_node, kRanksPerNodeHelp)->capture_default_str();
  study->add_option("--timeout", command->run.job.timeout_s, "Seconds a rank waits for another before failing")
      ->capture_default_str();
  study->add_option("--wall-timeout", command->run.job.wall_timeout_s, "mpi, simgrid: seconds before a run is stopped")
      ->capture_default_str();
  command->allreduce_option = add_allreduce_option(*study, command->allreduce);
  study->add_option("--results", command->run.job.cli.results, "Write the results (JSON) here")
      ->check(output_file_check());
  command->run.job.command = "study";
  command->run.job.progress = true;
  command->run.job.record_divergence = true;
  command->run.job.keep_interrupted = true;
  study->callback([&context, command] { run_study(context, *command); });
}
void register_algorithms_command(CLI::App& app, Context& context) {
  auto* command = app.add_subcommand("algorithms",
                                     "The SGD algorithms `dsgd run` knows, one line each. Roles: master (rank 0 "
                                     "serves the workers), servers (a parameter server that --servers S shards over "
                                     "ranks 0..S-1; default 1), - (workers only)");
  command->callback([&context] {
    // A sharded parameter server is an option of the parameter-server algorithms, not a copy of each: the roles
    // column says "servers" where --servers S shards the master over ranks 0..S-1.
    for (const auto& entry : algorithms::algorithm_catalog()) {
      const char* roles = entry.info.shardable ? "servers" : entry.info.has_master ? "master" : "-";
      char line[300];
      std::snprintf(line, sizeof line, "%-15s %-8s %-13s %s\n", entry.info.name.c_str(), roles,
                    entry.info.synchronous ? "deterministic" : "asynchronous", entry.info.description.c_str());
      context.out << line;
    }
  });
}

}  // namespace dsgd::app
