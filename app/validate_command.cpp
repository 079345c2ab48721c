// `dsgd validate`: every algorithm of the catalog run natively on this machine -- on threads and on MPI ranks --
// and predicted in SimGrid on the platforms `dsgd calibrate` wrote from microbenchmarks only (docs/design.md
// "Calibration, prediction, validation"; docs/validation.md). Prints measured and predicted seconds per iteration
// and the error per algorithm and executor. The prediction never reads the measured run: it takes the platform
// file, the model and the run's options, and -- unless --file-kernels -- the kernel microbenchmarks timed again
// right before and after the run. How runs are measured and rows summed up is measure/validation.hpp's.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/runner.hpp"
#include "app/commands.hpp"
#include "app/executors.hpp"
#include "app/run_common.hpp"
#include "core/format.hpp"
#include "measure/validation_entry.hpp"
#include "platforms/catalog.hpp"
#include "simulate/weak_scaling.hpp"

namespace dsgd::app {

namespace {

struct ValidateOptions {
  std::string platform = "this-machine";  // a file, a name of platforms/NAME.json, or a catalog name
  std::string threads_platform;           // default: the platform file with "-threads" before ".json"
  RunCli cli;                             // model, data, workers, batch, ...
  std::int64_t warmup = 10;               // iterations per worker in a round; the first round is not measured
  std::int64_t iterations = 50;           // iterations per worker measured after the warm-up, in rounds
  std::vector<std::string> executors{"threads", "mpi"};
  std::vector<std::string> algorithms;  // empty: the whole catalog
  int cores = 0;                        // this machine's cores; 0: the platform's host count (calibrate's)
  double tolerance = 0.15;
  double timeout_s = 120;
  measure::RunPolicy policy;    // when a run is measured again; whether the kernels are timed around it
  int kernel_repetitions = 20;  // of the kernels timed around a run
  int repetitions = 3;          // runs per row, each with its kernel timings and prediction (measure::RowRuns)
};

// A platform named on the command line: a file, platforms/NAME.json (where dsgd calibrate writes), or the catalog.
std::string platform_path(const std::string& name) {
  if (name.find('/') == std::string::npos && !name.ends_with(".json")) {
    const std::string written = "platforms/" + name + ".json";
    if (std::filesystem::exists(written)) return written;
    if (name == "this-machine") {
      throw InputError("validate: no " + written + " here: run `dsgd calibrate` first (it writes " + written +
                       " and platforms/this-machine-threads.json), or give --platform");
    }
  }
  return name;
}

std::string threads_platform_path(const ValidateOptions& options) {
  if (!options.threads_platform.empty()) return platform_path(options.threads_platform);
  const std::string path = platform_path(options.platform);
  if (!path.ends_with(".json")) {
    throw InputError("validate: platform '" + options.platform +
                     "' is no file, so there is no threads platform "
                     "beside it: give --threads-platform (dsgd calibrate writes both)");
  }
  return path.substr(0, path.size() - 5) + "-threads.json";
}

// The prediction of a run of `run`'s options on `platform`: the same run, size-only, at message fidelity, in its
// rounds.
simulate::ScalingPoint predict(const platforms::Platform& platform, const algorithms::RunOptions& run) {
  simulate::ScalingOptions scaling;
  scaling.algorithm = run.algorithm;
  scaling.model = run.model;
  scaling.hyper = run.hyper;
  scaling.workers = {run.workers};
  scaling.iterations = run.budget.iterations;
  scaling.round_iterations = run.budget.eval_every;
  scaling.fidelity = simulate::Fidelity::kMessage;
  return simulate::simulate_weak_scaling(platform, scaling).front();
}

struct Row {
  std::string algorithm;
  std::string executor;
  int ranks = 0;
  measure::RowRuns runs;
  std::string note;
};

std::string row_text(const Row& row) {
  const auto& runs = row.runs;
  return format("%-21s %-8s %5d %14.5f %14.5f %+8.1f%% %7.1f%% %7.2f %+6.1f%%  %s\n", row.algorithm.c_str(),
                row.executor.c_str(), row.ranks, runs.measured(), runs.predicted(), 100 * runs.error(),
                100 * runs.spread(), runs.others_cores, 100 * runs.drift, row.note.c_str());
}

void check(const ValidateOptions& options) {
  if (options.cli.run.workers < 1) throw InputError("validate: --workers must be at least 1");
  if (options.warmup < 1) throw InputError("validate: --warmup must be at least 1 iteration");
  if (options.iterations < options.warmup || options.iterations % options.warmup != 0) {
    throw InputError("validate: --iterations (" + std::to_string(options.iterations) +
                     ") must be a positive multiple of --warmup (" + std::to_string(options.warmup) +
                     "): they are measured in rounds of --warmup iterations");
  }
  if (!(options.tolerance > 0)) throw InputError("validate: --tolerance must be > 0");
  if (options.cores < 0) throw InputError("validate: --cores must be positive");
  if (options.policy.retries < 0) throw InputError("validate: --retries must be >= 0");
  if (!(options.policy.max_drift > 0)) throw InputError("validate: --drift must be > 0");
  if (!(options.policy.busy_cores > 0)) throw InputError("validate: --busy must be > 0");
  if (options.kernel_repetitions < 1) throw InputError("validate: --kernel-repetitions must be at least 1");
  if (options.repetitions < 1) throw InputError("validate: --repetitions must be at least 1");
  if (options.executors.empty()) throw InputError("validate: --executors lists none");
  for (const auto& executor : options.executors) find_executor(executor, native_executor_names());
  for (const auto& name : options.algorithms) algorithms::find_algorithm(name);  // lists the valid ones
}

void validate(Context& context, const ValidateOptions& options) {
  check(options);
  const auto mpi_platform = platforms::load_platform(platform_path(options.platform));
  const bool wants_threads = std::any_of(options.executors.begin(), options.executors.end(), [](const auto& name) {
    return find_executor(name, native_executor_names()).kind == ExecutorKind::kThreads;
  });
  const auto threads_platform = wants_threads ? platforms::load_platform(threads_platform_path(options)) : mpi_platform;
  const int cores = options.cores > 0 ? options.cores : mpi_platform.nodes.count;

  std::vector<std::string> names = options.algorithms;
  if (names.empty()) names = algorithms::algorithm_names();
  RunCli cli = options.cli;
  cli.run.budget = {};
  cli.run.budget.iterations = options.warmup + options.iterations;
  cli.run.budget.eval_every = options.warmup;  // a round each: the first is the warm-up
  const auto data = wants_threads ? load_run_data(cli) : algorithms::RunData{};
  measure::KernelBenchOptions bench;
  if (data.train) bench.dataset_images = data.train->size();  // batches drawn from as many images as the run's
  bench.model = cli.run.model;
  bench.batch = cli.run.hyper.batch;
  bench.repetitions = options.kernel_repetitions;
  bench.concurrent = 0;  // one copy per core, as dsgd calibrate times them (the rate alone: with_busy_timings)

  auto results = new_results(context);
  const std::string where = results.provenance.host_name + ", " + results.provenance.date;
  std::vector<Row> rows;
  const std::string header = format("%-21s %-8s %5s %14s %14s %9s %8s %7s %7s  %s\n", "algorithm", "executor", "ranks",
                                    "measured s/it", "predicted s/it", "error", "spread", "others", "drift", "model");
  for (const auto& name : names) {
    cli.run.algorithm = name;
    algorithms::check_run_options(cli.run);
    const auto& info = algorithms::find_algorithm(name).info;
    for (const auto& executor_name : options.executors) {
      const Executor& executor = find_executor(executor_name, native_executor_names());
      const bool threads = executor.kind == ExecutorKind::kThreads;
      context.err << "validate: " << name << " on " << executor.name << ", " << cli.run.workers << " workers"
                  << std::endl;
      Row row{name, std::string(executor.name), algorithms::world_size(cli.run), {}, {}};
      TrainingJob job;
      job.cli = cli;
      job.data = &data;
      job.timeout_s = options.timeout_s;
      job.wall_timeout_s = 10 * options.timeout_s;
      job.command = "validate";
      job.wall_timeout_option = "10 x --timeout";
      const measure::RowShape shape{options.repetitions, options.warmup, cli.run.budget.iterations,
                                    options.policy.file_kernels};
      reports::Entry entry;
      std::string prediction;
      for (int repetition = 0; repetition < options.repetitions; ++repetition) {
        std::vector<reports::Entry> attempts;  // the run of each measurement; measure_run says which is kept
        const auto measured = measure::measure_run(
            [&] {
              attempts.push_back(executor.train(job, context));
              return measure::steady_seconds_per_iteration(attempts.back());
            },
            bench, options.policy, context.err);
        row.note.clear();
        const auto platform = measure::run_platform(threads ? threads_platform : mpi_platform, measured, where,
                                                    row.ranks, cores, &row.note);
        const auto point = predict(platform, cli.run);
        row.runs.add(measured, point.seconds_per_iteration);
        const std::size_t worker = info.has_master ? 1 : 0;
        measure::add_repetition(entry, repetition, std::move(attempts[static_cast<std::size_t>(measured.attempt)]),
                                measured, point.seconds_per_iteration,
                                worker < point.per_rank.size() ? &point.per_rank[worker] : nullptr, shape);
        if (repetition == 0) {
          entry.platform = platform.name;
          prediction = "simgrid, " + std::string(simulate::to_string(point.fidelity)) + " fidelity, " + platform.name +
                       (measured.kernels ? ", kernels timed before and after each run, noise of the file"
                                         : ", kernels of the file") +
                       "; the median of " + std::to_string(options.repetitions) +
                       " runs by error, the breakdowns over all of them" + (row.note.empty() ? "" : "; " + row.note);
        }
      }
      context.out << (rows.empty() ? header : "") << row_text(row) << std::flush;

      entry.name =
          "validate/" + name + "/" + cli.run.model + "/" + std::to_string(cli.run.workers) + "workers/" + row.executor;
      measure::finish_row(entry, row.runs, shape, prediction);
      results.benchmarks.push_back(std::move(entry));
      rows.push_back(std::move(row));
    }
  }
  if (!options.cli.results.empty()) reports::write_results(options.cli.results, results);

  const auto worst = std::max_element(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::abs(a.runs.error()) < std::abs(b.runs.error());
  });
  const auto within = std::count_if(rows.begin(), rows.end(),
                                    [&](const Row& row) { return std::abs(row.runs.error()) <= options.tolerance; });
  context.out << format("%ld of %zu within %.0f%%; worst: %s on %s, %+.1f%%\n", static_cast<long>(within), rows.size(),
                        100 * options.tolerance, worst->algorithm.c_str(), worst->executor.c_str(),
                        100 * worst->runs.error());
}

}  // namespace

void register_validate_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<ValidateOptions>();
  options->cli.run.workers = 2;
  // Time per iteration does not depend on the step size, but a diverged run ends early: a step every algorithm of
  // the catalog survives (the momentum server of the asynchronous algorithms diverges at LeNet's usual 0.01).
  options->cli.run.hyper.learning_rate = 0.001F;
  // The accuracy is not what is validated: a tenth of Fashion-MNIST's test set after each round (20 ms, where all of
  // it took 0.55 s) keeps the kernel timings before and after a run close to its training.
  options->cli.test_images = 1000;
  auto* command = app.add_subcommand(
      "validate", "Run every algorithm natively (threads, MPI) and in SimGrid on the calibrated platform: error %");
  command->add_option("--platform", options->platform, "Calibrated platform: NAME (platforms/NAME.json) or FILE")
      ->capture_default_str();
  command->add_option("--threads-platform", options->threads_platform,
                      "Platform for threads runs (default: the platform file with -threads before .json)");
  command->add_option("--model", options->cli.run.model, "Model of the zoo")->capture_default_str();
  command->add_option("--data", options->cli.dataset, "fashion-mnist, idx:FOLDER or cifar10:FOLDER")
      ->capture_default_str();
  command
      ->add_option("--workers", options->cli.run.workers, "Workers (a master, if the algorithm has one, is one more)")
      ->capture_default_str();
  command->add_option("--batch", options->cli.run.hyper.batch, "Images per worker per iteration")
      ->capture_default_str();
  command->add_option("--lr", options->cli.run.hyper.learning_rate, "Learning rate eta")->capture_default_str();
  command
      ->add_option("--warmup", options->warmup,
                   "Iterations per worker per round; the first round is the warm-up, the others are measured")
      ->capture_default_str();
  command->add_option("--iterations", options->iterations, "Iterations per worker measured (a multiple of --warmup)")
      ->capture_default_str();
  command->add_option("--executors", options->executors, "threads, mpi or both")->delimiter(',')->capture_default_str();
  command->add_option("--algos", options->algorithms, "Only these algorithms (default: the whole catalog)")
      ->delimiter(',');
  command->add_option("--cores", options->cores, "Cores of this machine (default: the platform's hosts)");
  command->add_option("--tolerance", options->tolerance, "Error counted as within, a fraction")->capture_default_str();
  command->add_option("--timeout", options->timeout_s, "Seconds a rank waits for another before failing")
      ->capture_default_str();
  command
      ->add_option("--retries", options->policy.retries,
                   "Measure a run again while other programs disturbed it or the kernels' speed moved over it")
      ->capture_default_str();
  command
      ->add_option("--busy", options->policy.busy_cores, "Cores other programs may keep busy before a run is retried")
      ->capture_default_str();
  command->add_flag("--file-kernels", options->policy.file_kernels,
                    "Predict with the platform file's kernel timings instead of timing the kernels around each run");
  command
      ->add_option("--drift", options->policy.max_drift,
                   "Change of the forward/backward's time over a run before it is measured again, a fraction")
      ->capture_default_str();
  command->add_option("--kernel-repetitions", options->kernel_repetitions, "Timed repetitions per kernel class")
      ->capture_default_str();
  command
      ->add_option("--repetitions", options->repetitions,
                   "Runs per row, each with its kernel timings and prediction; the row is the median run by error")
      ->capture_default_str();
  command
      ->add_option("--test-images", options->cli.test_images,
                   "Evaluate on at most the first this many test images (0: all)")
      ->capture_default_str();
  command->add_option("--results", options->cli.results, "Write the results (JSON) here")->check(output_file_check());
  command->callback([&context, options] { validate(context, *options); });
}

}  // namespace dsgd::app
