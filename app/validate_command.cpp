// `dsgd validate`: every algorithm of the catalog run natively on this machine -- on threads and on MPI ranks --
// and predicted in SimGrid on the platforms `dsgd calibrate` wrote from microbenchmarks only (DESIGN.md
// "Calibration, prediction, validation"; docs/validation.md). Prints measured and predicted seconds per iteration
// and the error per algorithm and executor. The prediction never reads the measured run: it takes the platform
// file, the model and the run's options, and -- unless --file-kernels -- the kernel microbenchmarks timed again
// right before and after the run, because this machine's speed wanders between a calibration and the runs.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/runner.hpp"
#include "app/commands.hpp"
#include "app/mpi_worker.hpp"
#include "app/run_common.hpp"
#include "measure/background_load.hpp"
#include "measure/calibration.hpp"
#include "measure/kernel_timings.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/threads/executor.hpp"
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
  int retries = 2;           // measurements again of a run other programs or the machine's drift disturbed
  double busy_cores = 0.25;  // what counts as disturbed: cores other programs kept busy on average
  // Kernel timings: taken again right before and after each run (the platform file's links and waiting share
  // stay), unless file_kernels; a run over which the forward/backward's time moved by more than max_drift is
  // measured again.
  bool file_kernels = false;
  double max_drift = 0.05;
  int kernel_repetitions = 20;
  // Runs per row, each with its kernel timings and its prediction; the row is the median run by error. This VM's
  // speed moves by 10-30% for seconds at a time (docs/validation.md), so one run of a second measures its phase as
  // much as the algorithm, and a burst inside one run moves no median.
  int repetitions = 3;
};

const std::vector<std::string>& executor_names() {
  static const std::vector<std::string> names{"threads", "mpi"};
  return names;
}

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

// Seconds per iteration after the warm-up round, from the curve's (time, iteration) points: per round, rank 0's
// training time over its iterations; the median over the rounds after the first, so that a burst of load from
// other programs in one round does not move it.
double steady_seconds_per_iteration(const reports::Entry& entry) {
  const reports::Curve* by_time = nullptr;
  const reports::Curve* by_iteration = nullptr;
  for (const auto& curve : entry.curves) {
    if (curve.name == "test_accuracy") by_time = &curve;
    if (curve.name == "test_accuracy_by_iteration") by_iteration = &curve;
  }
  if (by_time == nullptr || by_iteration == nullptr || by_time->points.size() < 2 ||
      by_time->points.size() != by_iteration->points.size()) {
    throw InternalError("validate: run '" + entry.name + "' has no curve of two rounds or more");
  }
  std::vector<double> per_round;
  for (std::size_t i = 1; i < by_time->points.size(); ++i) {
    per_round.push_back((by_time->points[i].first - by_time->points[i - 1].first) /
                        (by_iteration->points[i].first - by_iteration->points[i - 1].first));
  }
  return measure::median(std::move(per_round));
}

reports::Entry measure_threads(const RunCli& cli, const algorithms::RunData& data, double timeout_s) {
  algorithms::RunResult result;
  WorldOptions world;
  world.size = algorithms::world_size(cli.run);
  world.timeout_s = timeout_s;
  measure::threads::run_threads(world, algorithms::training_worker(cli.run, data, &result));
  return run_entry(cli, result, "threads");
}

reports::Entry measure_mpi(const RunCli& cli, double timeout_s, Context& context) {
  WorkerLaunch launch;
  launch.command = "validate";
  launch.what = "dsgd-mpi run";
  launch.ranks = algorithms::world_size(cli.run);
  launch.program = {measure::mpi::worker_executable().string(), "--timeout", std::to_string(timeout_s), "run"};
  for (const auto& argument : run_arguments(cli)) launch.program.push_back(argument);
  launch.timeout_s = 10 * timeout_s;
  const auto outcome = run_worker(launch, context);
  if (outcome.results.benchmarks.size() != 1) throw InternalError("validate: dsgd-mpi wrote no run result");
  return outcome.results.benchmarks.front();
}

// The simulated platform of a world of `ranks` ranks on a machine of `cores` cores: one simulated host per rank,
// all on the machine's one shared chip (platforms::SharedChip, from `dsgd calibrate`), so a rank computes at the
// calibrated rate alone or with every core busy as the others compute, and ranks computing beyond the cores (an
// asynchronous master updating while both workers compute) take turns. A waiting rank takes the chip's measured
// waiting share of a core (threads sleep on a condition variable, MPI ranks sleep between polls after a millisecond),
// and a message between two ranks while the others compute costs the chip's loaded link; the note says so where
// there are more ranks than cores.
platforms::Platform world_platform(platforms::Platform platform, int ranks, int cores, std::string* note) {
  platform.nodes.count = std::max(platform.nodes.count, ranks);
  auto& chip = platform.nodes.shared_chip;
  if (chip) chip->nodes = platform.nodes.count;
  if (ranks > cores) {
    char text[200];
    std::snprintf(text, sizeof text, "%d ranks on %d cores: a waiting rank takes %.3f of a core%s", ranks, cores,
                  chip ? chip->waiting_share : 0.0,
                  chip && chip->loaded_link ? ", a message beside computing ranks the loaded link" : "");
    *note = text;
  }
  return platform;
}

struct Row {
  std::string algorithm;
  std::string executor;
  int ranks = 0;
  std::vector<double> measured_s;   // per run
  std::vector<double> predicted_s;  // per run, from the kernels timed around it
  double others_cores = 0;          // the most of any run
  double drift = 0;                 // the forward/backward's time after a run over before, minus 1: the largest in size
  std::string note;

  static double run_error(double measured, double predicted) { return (predicted - measured) / measured; }
  // The median run by error (of an even number, the two middle ones, their seconds averaged): its measured and
  // predicted seconds per iteration.
  std::pair<double, double> median_run() const {
    std::vector<std::size_t> order(measured_s.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return run_error(measured_s[a], predicted_s[a]) < run_error(measured_s[b], predicted_s[b]);
    });
    const std::size_t upper = order.size() / 2;
    const std::size_t lower = order.size() % 2 == 1 ? upper : upper - 1;
    return {(measured_s[order[lower]] + measured_s[order[upper]]) / 2,
            (predicted_s[order[lower]] + predicted_s[order[upper]]) / 2};
  }
  double measured() const { return median_run().first; }
  double predicted() const { return median_run().second; }
  double error() const { return run_error(measured(), predicted()); }
  // How far apart the runs measured: (slowest - fastest) / the median run's.
  double spread() const {
    const auto [least, most] = std::minmax_element(measured_s.begin(), measured_s.end());
    return (*most - *least) / measured();
  }
};

std::string row_text(const Row& row) {
  char line[300];
  std::snprintf(line, sizeof line, "%-21s %-8s %5d %14.5f %14.5f %+8.1f%% %7.1f%% %7.2f %+6.1f%%  %s\n",
                row.algorithm.c_str(), row.executor.c_str(), row.ranks, row.measured(), row.predicted(),
                100 * row.error(), 100 * row.spread(), row.others_cores, 100 * row.drift, row.note.c_str());
  return line;
}

// The predicted breakdown of a worker (rank 1 with a master, else rank 0) per iteration, added into the entry with
// `weight` (1 / repetitions: the entry holds the mean).
void add_predicted(reports::Entry& entry, const simulate::ScalingPoint& point, bool has_master, std::int64_t iterations,
                   double weight) {
  const std::size_t worker = has_master ? 1 : 0;
  if (worker >= point.per_rank.size()) return;
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    const double seconds = point.per_rank[worker].seconds[i];
    if (seconds > 0) {
      entry.counters["predicted_s_per_iteration:" + std::string(kCategoryNames[i])] +=
          weight * seconds / static_cast<double>(iterations);
    }
  }
}

// A later repetition's breakdowns added into the entry of the first: breakdown_s and first_round_s become sums over
// the repetitions.
void add_repetition(reports::Entry& entry, const reports::Entry& repetition) {
  for (const auto& [category, seconds] : repetition.breakdown_s) entry.breakdown_s[category] += seconds;
  for (const auto& [name, value] : repetition.counters) {
    if (name.starts_with("first_round_s:")) entry.counters[name] += value;
  }
}

// The measured breakdown of the worker per iteration after the warm-up round (the entry's breakdown_s minus its
// first_round_s, over the measured iterations of every repetition), into the entry beside the predicted one.
void add_measured(reports::Entry& entry, std::int64_t iterations) {
  for (const auto& [category, seconds] : entry.breakdown_s) {
    const auto first = entry.counters.find("first_round_s:" + category);
    const double steady_s = seconds - (first == entry.counters.end() ? 0.0 : first->second);
    entry.counters["measured_s_per_iteration:" + category] = std::max(0.0, steady_s) / static_cast<double>(iterations);
  }
}

// One measured run of a row, with the kernel timings taken around it.
struct Measured {
  reports::Entry entry;
  double seconds_per_iteration = 0;
  double others_cores = 0;                 // cores other programs kept busy during the run
  // The mean of the busy timings before and after; none with --file-kernels.
  std::optional<measure::KernelTimings> kernels;
  double drift = 0;                        // the forward/backward's time after over before, minus 1

  // How far the run is from undisturbed, in units of what is tolerated (<= 1: undisturbed).
  double disturbance(const ValidateOptions& options) const {
    return std::max(others_cores / options.busy_cores, std::abs(drift) / options.max_drift);
  }
};

// Measures a row by `run` (a run result entry): the kernels are timed right before and after it unless
// --file-kernels, and the run is measured again (up to --retries times) while other programs kept more than --busy
// cores busy or the forward/backward's time moved by more than --drift over it (this VM's speed wanders by up to
// 25% within an hour). The least disturbed measurement is kept; its disturbance is reported beside it.
template <typename Run>
Measured measure_row(Run&& run, const ValidateOptions& options, const RunCli& cli, const algorithms::RunData& data,
                     Context& context) {
  measure::KernelBenchOptions bench;
  if (data.train) bench.dataset_images = data.train->size();  // batches drawn from as many images as the run's
  bench.model = cli.run.model;
  bench.batch = cli.run.hyper.batch;
  bench.repetitions = options.kernel_repetitions;
  bench.concurrent = 0;  // one copy per core, as dsgd calibrate times them (the rate alone: with_busy_timings)
  const auto once = [&] {
    Measured measured;
    std::optional<measure::KernelTimings> before;
    if (!options.file_kernels) before = measure::KernelTimings{measure::time_busy_kernels(bench, 0, context.err), {}};
    const auto start = measure::CpuClock::now();
    measured.entry = run();
    measured.others_cores = measure::CpuClock::now().others_cores_since(start);
    measured.seconds_per_iteration = steady_seconds_per_iteration(measured.entry);
    if (before) {
      const measure::KernelTimings after{measure::time_busy_kernels(bench, 0, context.err), std::nullopt};
      measured.drift = after.busy_seconds("conv") / before->busy_seconds("conv") - 1;
      measured.kernels = measure::mean_of(*before, after);
    }
    return measured;
  };
  auto best = once();
  for (int retry = 0; retry < options.retries && best.disturbance(options) > 1; ++retry) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "validate: other programs kept %.2f cores busy, the forward/backward's time moved %+.1f%%; "
                  "measuring again\n",
                  best.others_cores, 100 * best.drift);
    context.err << text << std::flush;
    auto again = once();
    if (again.disturbance(options) < best.disturbance(options)) best = std::move(again);
  }
  return best;
}

// The platform a run is predicted on: the calibrated one of its executor, with the kernel rates timed around the run
// (if any) and as many hosts as ranks (world_platform).
platforms::Platform run_platform(platforms::Platform platform, const Measured& measured, const std::string& where,
                                 int ranks, int cores, std::string* note) {
  if (measured.kernels) {
    // The rates from the timings around the run, the noise and the chip's ratio alone over busy from the file's:
    // tens of repetitions cannot see a copy that is slower for seconds, which dsgd calibrate's window does, and
    // their mean in turns moved by 16% between three timings minutes apart where the copies at once moved by 2.5%
    // (docs/validation.md, "The rate alone from the file's ratio").
    auto noise = platform.noise;
    platform = measure::with_busy_timings(std::move(platform), measured.kernels->busy, where);
    platform.noise = std::move(noise);
  }
  return world_platform(std::move(platform), ranks, cores, note);
}

// The prediction of a run of `run`'s options: the same run, size-only, at message fidelity, in its rounds.
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
  if (options.retries < 0) throw InputError("validate: --retries must be >= 0");
  if (!(options.max_drift > 0)) throw InputError("validate: --drift must be > 0");
  if (!(options.busy_cores > 0)) throw InputError("validate: --busy must be > 0");
  if (options.kernel_repetitions < 1) throw InputError("validate: --kernel-repetitions must be at least 1");
  if (options.repetitions < 1) throw InputError("validate: --repetitions must be at least 1");
  if (options.executors.empty()) throw InputError("validate: --executors lists none");
  for (const auto& executor : options.executors) {
    if (std::find(executor_names().begin(), executor_names().end(), executor) == executor_names().end()) {
      throw UnknownNameError("executor", executor, executor_names());
    }
  }
  for (const auto& name : options.algorithms) algorithms::find_algorithm(name);  // lists the valid ones
}

void validate(Context& context, const ValidateOptions& options) {
  check(options);
  const auto mpi_platform = platforms::load_platform(platform_path(options.platform));
  const bool wants_threads =
      std::find(options.executors.begin(), options.executors.end(), "threads") != options.executors.end();
  const auto threads_platform = wants_threads ? platforms::load_platform(threads_platform_path(options)) : mpi_platform;
  const int cores = options.cores > 0 ? options.cores : mpi_platform.nodes.count;

  std::vector<std::string> names = options.algorithms;
  if (names.empty()) names = algorithms::algorithm_names();
  RunCli cli = options.cli;
  cli.run.budget = {};
  cli.run.budget.iterations = options.warmup + options.iterations;
  cli.run.budget.eval_every = options.warmup;  // a round each: the first is the warm-up
  const auto data = wants_threads ? load_run_data(cli) : algorithms::RunData{};

  auto results = new_results(context);
  const std::string where = results.provenance.host_name + ", " + results.provenance.date;
  std::vector<Row> rows;
  char header[200];
  std::snprintf(header, sizeof header, "%-21s %-8s %5s %14s %14s %9s %8s %7s %7s  %s\n", "algorithm", "executor",
                "ranks", "measured s/it", "predicted s/it", "error", "spread", "others", "drift", "model");
  for (const auto& name : names) {
    cli.run.algorithm = name;
    algorithms::check_run_options(cli.run);
    const auto& info = algorithms::find_algorithm(name).info;
    for (const auto& executor : options.executors) {
      const bool mpi = executor == "mpi";
      context.err << "validate: " << name << " on " << executor << ", " << cli.run.workers << " workers" << std::endl;
      Row row;
      row.algorithm = name;
      row.executor = executor;
      row.ranks = algorithms::world_size(cli.run);
      reports::Entry entry;
      std::string prediction;
      const double weight = 1.0 / options.repetitions;
      for (int repetition = 0; repetition < options.repetitions; ++repetition) {
        auto measured = measure_row(
            [&] {
              return mpi ? measure_mpi(cli, options.timeout_s, context) : measure_threads(cli, data, options.timeout_s);
            },
            options, cli, data, context);
        row.note.clear();
        const auto platform =
            run_platform(mpi ? mpi_platform : threads_platform, measured, where, row.ranks, cores, &row.note);
        const auto point = predict(platform, cli.run);

        row.measured_s.push_back(measured.seconds_per_iteration);
        row.predicted_s.push_back(point.seconds_per_iteration);
        row.others_cores = std::max(row.others_cores, measured.others_cores);
        if (std::abs(measured.drift) > std::abs(row.drift)) row.drift = measured.drift;
        if (repetition == 0) {
          entry = std::move(measured.entry);
          entry.platform = platform.name;
          prediction = "simgrid, " + std::string(simulate::to_string(point.fidelity)) + " fidelity, " + platform.name +
                       (measured.kernels ? ", kernels timed before and after each run, noise of the file"
                                         : ", kernels of the file") +
                       "; the median of " + std::to_string(options.repetitions) +
                       " runs by error, the breakdowns over all of them" + (row.note.empty() ? "" : "; " + row.note);
        } else {
          add_repetition(entry, measured.entry);
        }
        const std::string each = "repetition" + std::to_string(repetition) + "_";
        entry.counters[each + "measured_s_per_iteration"] = measured.seconds_per_iteration;
        entry.counters[each + "predicted_s_per_iteration"] = point.seconds_per_iteration;
        if (measured.kernels) entry.counters[each + "kernel_drift"] = measured.drift;
        add_predicted(entry, point, info.has_master, cli.run.budget.iterations, weight);
      }
      context.out << (rows.empty() ? header : "") << row_text(row) << std::flush;

      entry.name =
          "validate/" + name + "/" + cli.run.model + "/" + std::to_string(cli.run.workers) + "workers/" + executor;
      entry.counters["runs"] = options.repetitions;
      entry.counters["measured_s_per_iteration"] = row.measured();
      entry.counters["predicted_s_per_iteration"] = row.predicted();
      entry.counters["error"] = row.error();
      entry.counters["measured_spread"] = row.spread();
      entry.counters["warmup_iterations"] = static_cast<double>(options.warmup);
      entry.counters["others_busy_cores"] = row.others_cores;
      if (!options.file_kernels) entry.counters["kernel_drift"] = row.drift;
      entry.labels["prediction"] = prediction;
      add_measured(entry, options.iterations * options.repetitions);
      results.benchmarks.push_back(std::move(entry));
      rows.push_back(std::move(row));
    }
  }
  if (!options.cli.results.empty()) reports::write_results(options.cli.results, results);

  const auto worst = std::max_element(
      rows.begin(), rows.end(), [](const Row& a, const Row& b) { return std::abs(a.error()) < std::abs(b.error()); });
  const auto within = std::count_if(rows.begin(), rows.end(),
                                    [&](const Row& row) { return std::abs(row.error()) <= options.tolerance; });
  char line[300];
  std::snprintf(line, sizeof line, "%ld of %zu within %.0f%%; worst: %s on %s, %+.1f%%\n", static_cast<long>(within),
                rows.size(), 100 * options.tolerance, worst->algorithm.c_str(), worst->executor.c_str(),
                100 * worst->error());
  context.out << line;
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
      ->add_option("--retries", options->retries,
                   "Measure a run again while other programs disturbed it or the kernels' speed moved over it")
      ->capture_default_str();
  command->add_option("--busy", options->busy_cores, "Cores other programs may keep busy before a run is retried")
      ->capture_default_str();
  command->add_flag("--file-kernels", options->file_kernels,
                    "Predict with the platform file's kernel timings instead of timing the kernels around each run");
  command->add_option("--drift", options->max_drift,
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
  command->add_option("--results", options->cli.results, "Write the results (JSON) here");
  command->callback([&context, options] { validate(context, *options); });
}

}  // namespace dsgd::app
