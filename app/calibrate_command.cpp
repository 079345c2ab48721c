// `dsgd calibrate`: measures this machine's MPI ping-pong with the dsgd-mpi worker (under mpirun, since dsgd itself
// links SimGrid and never OpenMPI) and the threads executor's ping-pong, fits alpha and beta per message-size
// segment, times the kernel classes with the native kernels (measure/kernel_calibration.hpp), and writes two
// platform files the simulator can load -- one whose link is MPI's, one whose link is the threads executor's --
// with the same CPU, memory and kernel efficiencies (DESIGN.md "Calibration, prediction, validation").

#include <algorithm>
#include <cstdio>
#include <optional>

#include "app/commands.hpp"
#include "app/mpi_worker.hpp"
#include "core/error.hpp"
#include "measure/calibration.hpp"
#include "measure/kernel_calibration.hpp"
#include "measure/kernel_timings.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/threads_pingpong.hpp"
#include "measure/waiting_share.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"

namespace dsgd::app {

namespace {

struct CalibrateOptions {
  int ranks = 2;
  std::string out = "platforms/this-machine.json";
  std::string threads_out;  // default: --out with "-threads" before ".json"
  std::string name = "this-machine";
  bool kernels_only = false;
  // 0 copies: one per physical core. The repetitions also give the platform's noise (how much the slowest copy
  // lags, and for how long), and on this project's VM a copy runs slower for seconds at a time: 30 repetitions
  // (0.4 s) measured the slowest of 2 copies 1.02 x the mean and no persistence; 600 (8 s), minutes later, 1.064
  // and 0.53 (docs/validation.md). So the window is as long as the runs dsgd validate predicts, a few seconds.
  measure::KernelBenchOptions kernels{.concurrent = 0, .repetitions = 400};
  int kernel_retries = 2;
  double min_bytes = 8;
  double max_bytes = 64.0 * 1024 * 1024;
  int rounds = 15;
  // Messages from cold buffers, as training's exchanges between forward/backward passes (measure/pingpong_buffers.hpp).
  double pool_bytes = static_cast<double>(measure::cold_pool_bytes());
  std::vector<double> boundaries{measure::kDefaultSegmentBoundaries.begin(),  // why these: measure/calibration.hpp
                                 measure::kDefaultSegmentBoundaries.end()};
  int nodes = 0;
  std::string weighting = "relative";
  std::string results;  // keep dsgd-mpi's ping-pong results here
  std::string worker;   // dsgd-mpi; default: beside this executable
  int timeout_s = 600;

  std::string threads_path() const {
    if (!threads_out.empty()) return threads_out;
    const std::string stem = out.size() > 5 && out.ends_with(".json") ? out.substr(0, out.size() - 5) : out;
    return stem + "-threads.json";
  }
};

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// The ping-pong's points: each size's median round trip, or (`mean`) its mean.
std::vector<measure::PingPongPoint> pingpong_points(const reports::Results& results, const std::string& source,
                                                    bool mean = false) {
  const std::string statistic = mean ? "round_trip_mean_s" : "round_trip_s";
  std::vector<measure::PingPongPoint> points;
  for (const auto& entry : results.benchmarks) {
    if (entry.name.rfind("pingpong/", 0) != 0) continue;
    const auto bytes = entry.counters.find("bytes");
    const auto round_trip = entry.counters.find(statistic);
    if (bytes == entry.counters.end() || round_trip == entry.counters.end()) {
      throw InputError(source + ": entry '" + entry.name + "' lacks the bytes or " + statistic + " counter");
    }
    points.push_back({bytes->second, round_trip->second});
  }
  if (points.empty()) throw InputError(source + ": no pingpong/* entries");
  return points;
}

// Each measured size beside its segment's fit, then the fit per segment.
void print_fit(std::ostream& out, std::vector<measure::PingPongPoint> points,
               const std::vector<measure::SegmentFit>& segments, const std::string& weighting) {
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  char line[160];
  std::snprintf(line, sizeof line, "%12s %16s %14s %10s\n", "bytes", "one way us", "fitted us", "error");
  out << line;
  for (const auto& point : points) {
    const auto segment = std::find_if(segments.begin(), segments.end(), [&](const auto& s) {
      return point.bytes >= s.from_bytes && point.bytes < s.to_bytes;
    });
    const double measured = point.round_trip_s / 2;
    if (segment == segments.end()) {
      std::snprintf(line, sizeof line, "%12.0f %16.3f %14s %10s\n", point.bytes, measured * 1e6, "-", "-");
    } else {
      const double fitted = segment->one_way_s(point.bytes);
      std::snprintf(line, sizeof line, "%12.0f %16.3f %14.3f %9.1f%%\n", point.bytes, measured * 1e6, fitted * 1e6,
                    100 * (fitted - measured) / measured);
    }
    out << line;
  }
  out << "alpha-beta fit per segment (" << weighting << " least squares, round trip = 2 alpha + 2 n beta):\n";
  for (const auto& segment : segments) out << "  " << measure::describe(segment) << '\n';
}

void print_link(std::ostream& out, const std::string& path, const platforms::Platform& platform) {
  const auto& link = platform.network.link;
  char line[256];
  std::snprintf(line, sizeof line,
                "wrote %s: %d hosts, link latency %.3g us, bandwidth %.3g GB/s (%zu segments), peak %.3g GFLOP/s "
                "per host\n",
                path.c_str(), platform.nodes.count, link.latency_s * 1e6, link.bandwidth_Bps / 1e9,
                link.segments.size(), platform.nodes.cpu.peak_flops / 1e9);
  out << line;
  // What the simulator will charge per size: each segment's alpha and bandwidth from its lower boundary on.
  for (const auto& segment : link.segments) {
    std::snprintf(line, sizeof line, "  from %12s: latency %.3g us, bandwidth %.3g GB/s\n",
                  measure::bytes_text(segment.min_bytes).c_str(), segment.latency_s * 1e6, segment.bandwidth_Bps / 1e9);
    out << line;
  }
}

// The share of a core a waiting rank takes (platforms::SharedChip::waiting_share) on one executor, and its source.
struct MeasuredWaiting {
  double share = 0;
  std::string source;
};

// Measured with one rank more than the cores: the oversubscribed worlds (a master and a worker per core) are where a
// waiting rank's CPU time comes out of the computing ranks'.
constexpr double kWaitingSeconds = 2;

MeasuredWaiting describe_waiting(const std::string& executor, const measure::WaitingShare& measured,
                                 const std::string& where) {
  char text[320];
  std::snprintf(text, sizeof text,
                "measured by dsgd calibrate on %s: rank 0 of %d %s ranks waited %.3f s for messages while the other %d "
                "computed, and took %.3f s of CPU meanwhile",
                where.c_str(), measured.computing + 1, executor.c_str(), measured.wall_s, measured.computing,
                measured.cpu_s);
  return {std::min(1.0, measured.share()), text};
}

struct WaitingShares {
  MeasuredWaiting mpi;
  MeasuredWaiting threads;
};

WaitingShares calibrate_waiting(Context& context, const CalibrateOptions& options, const std::string& where) {
  const int ranks = std::max(1, measure::read_cpu_facts().physical_cores) + 1;
  context.err << "calibrate: the share of a core a waiting rank takes, " << ranks << " ranks" << std::endl;
  WorkerLaunch launch;
  launch.command = "calibrate";
  launch.what = "the waiting share";
  launch.ranks = ranks;
  launch.program = {options.worker.empty() ? measure::mpi::worker_executable().string() : options.worker, "waiting",
                    "--seconds", number_text(kWaitingSeconds)};
  launch.timeout_s = options.timeout_s;
  const auto outcome = run_worker(launch, context);
  measure::WaitingShare mpi;
  for (const auto& entry : outcome.results.benchmarks) {
    if (entry.name != "waiting_share") continue;
    mpi.wall_s = entry.real_time;
    mpi.cpu_s = entry.cpu_time;
    mpi.computing = static_cast<int>(entry.ranks) - 1;
  }
  if (!(mpi.wall_s > 0)) throw Error("calibrate: " + outcome.results_path.string() + " has no waiting_share entry");
  WaitingShares shares{describe_waiting("MPI", mpi, where),
                       describe_waiting("threads", measure::threads_waiting_share(ranks, kWaitingSeconds), where)};
  char line[160];
  std::snprintf(line, sizeof line, "waiting rank's share of a core, %d ranks on %d cores: MPI %.3f, threads %.3f\n",
                ranks, ranks - 1, shares.mpi.share, shares.threads.share);
  context.out << line;
  return shares;
}

// The threads ping-pong over the options' sizes.
measure::ThreadsPingPongOptions threads_pingpong_options(const CalibrateOptions& options) {
  measure::ThreadsPingPongOptions pingpong;
  pingpong.min_bytes = options.min_bytes;
  pingpong.max_bytes = options.max_bytes;
  pingpong.rounds = options.rounds;
  pingpong.pool_bytes = static_cast<std::size_t>(options.pool_bytes);
  return pingpong;
}

// dsgd-mpi's ping-pong over the options' sizes on `ranks` ranks, those beside the pair computing if `busy`.
WorkerLaunch pingpong_launch(const CalibrateOptions& options, const std::string& what, int ranks, bool busy) {
  WorkerLaunch launch;
  launch.command = "calibrate";
  launch.what = what;
  launch.ranks = ranks;
  launch.program = {options.worker.empty() ? measure::mpi::worker_executable().string() : options.worker,
                    "pingpong",
                    "--min-bytes",
                    number_text(options.min_bytes),
                    "--max-bytes",
                    number_text(options.max_bytes),
                    "--rounds",
                    std::to_string(options.rounds),
                    "--pool-bytes",
                    number_text(options.pool_bytes),
                    "--quiet"};
  if (busy) launch.program.push_back("--busy");
  launch.timeout_s = options.timeout_s;
  return launch;
}

// The links of both executors between two ranks while the chip's other cores compute
// (platforms::SharedChip::loaded_link): the ping-pongs again, with one more rank than the cores, the ranks beside
// the pair computing. None on a single core (every transfer there shares its core already).
struct LoadedLinks {
  std::optional<platforms::Link> mpi;
  std::optional<platforms::Link> threads;
};

LoadedLinks calibrate_loaded_links(Context& context, const CalibrateOptions& options,
                                   const measure::CalibrationInput& mpi, const measure::CalibrationInput& threads,
                                   measure::FitWeighting weighting) {
  const int busy_ranks = measure::read_cpu_facts().physical_cores - 1;
  if (busy_ranks < 1) return {};
  const std::string beside = " while " + std::to_string(busy_ranks) + " more rank" + (busy_ranks > 1 ? "s" : "") +
                             " computed (a busy loop), mean round trips";
  context.err << "calibrate: the ping-pongs" << beside << std::endl;
  // The link of `input`'s executor fitted to `points`, printed as `executor`'s.
  const auto loaded_link = [&](measure::CalibrationInput input, const std::vector<measure::PingPongPoint>& points,
                               const std::string& executor) {
    input.ranks = busy_ranks + 2;
    input.benchmark += beside;
    input.link_name += "-loaded";
    input.segments = measure::fit_alpha_beta(points, options.boundaries, weighting);
    context.out << executor << " ping-pong" << beside << ":\n";
    print_fit(context.out, points, input.segments, options.weighting);
    return measure::calibrated_link(input);
  };
  // The mean, not the median: beside computing ranks the operating system now and then preempts one of the pair
  // for a time slice (on this project's 2-core VM a 1 MiB round trip: median 0.21 ms, slowest 1.1 ms), and the
  // training's messages pay those too.
  const auto outcome = run_worker(pingpong_launch(options, "the loaded ping-pong", busy_ranks + 2, true), context);
  LoadedLinks links;
  links.mpi = loaded_link(mpi, pingpong_points(outcome.results, outcome.results_path.string(), true), "MPI");
  auto pingpong = threads_pingpong_options(options);
  pingpong.busy_ranks = busy_ranks;
  pingpong.mean = true;
  links.threads = loaded_link(threads, measure::threads_pingpong(pingpong), "threads");
  return links;
}

// Writes `platform` with the kernel timings and the chip's measured waiting share (and loaded link, if measured;
// else the platform's stays) to `path`.
void write_calibrated(Context& context, const std::string& path, platforms::Platform platform,
                      const measure::KernelTimings& kernels, const MeasuredWaiting& waiting,
                      const std::optional<platforms::Link>& loaded_link, const std::string& where) {
  platform = measure::with_kernel_timings(std::move(platform), kernels, where);
  if (auto& chip = platform.nodes.shared_chip) {
    chip->waiting_share = waiting.share;
    chip->sources["waiting_share"] = waiting.source;
    if (loaded_link) chip->loaded_link = loaded_link;
  }
  measure::write_platform_file(path, platform);
  print_link(context.out, path, platform);
  const auto print = [&](const char* what, const platforms::KernelEfficiency& efficiency) {
    std::string line = what;
    for (const auto& [kernel_class, fraction] : efficiency.by_class) {
      char part[64];
      std::snprintf(part, sizeof part, " %s %.3g;", kernel_class.c_str(), fraction);
      line += part;
    }
    context.out << line << '\n';
  };
  print("  kernel efficiency, every core busy:", platform.nodes.cpu.efficiency);
  if (platform.nodes.shared_chip) print("  kernel efficiency, one core alone:", platform.nodes.shared_chip->alone);
}

void calibrate(Context& context, const CalibrateOptions& options) {
  if (options.ranks < 2) {
    throw InputError("calibrate: --ranks must be at least 2 (the ping-pong needs two), got " +
                     std::to_string(options.ranks));
  }
  if (options.nodes < 0) throw InputError("calibrate: --nodes must be positive");
  if (!(options.pool_bytes >= 0)) throw InputError("calibrate: --pool-bytes must be >= 0");
  const auto weighting =
      options.weighting == "absolute" ? measure::FitWeighting::kAbsolute : measure::FitWeighting::kRelative;
  if (options.weighting != "absolute" && options.weighting != "relative") {
    throw UnknownNameError("fit weighting", options.weighting, {"absolute", "relative"});
  }
  const auto provenance = new_results(context).provenance;
  const std::string where = provenance.host_name + ", " + provenance.date;
  if (options.kernels_only) {
    // New kernel efficiencies into the platforms an earlier calibration wrote; their links stay.
    const auto kernels =
        measure::time_kernel_classes(options.kernels, options.kernel_retries, context.err, &context.out);
    const auto waiting = calibrate_waiting(context, options, where);
    write_calibrated(context, options.out, platforms::load_platform(options.out), kernels, waiting.mpi, std::nullopt,
                     where);
    write_calibrated(context, options.threads_path(), platforms::load_platform(options.threads_path()), kernels,
                     waiting.threads, std::nullopt, where);
    return;
  }

  // Which buffers both ping-pongs sent from, for the links' sources.
  const std::string buffers =
      "messages " + measure::pingpong_buffers_text(static_cast<std::size_t>(options.pool_bytes));
  auto launch = pingpong_launch(options, "the ping-pong", options.ranks, false);
  launch.results = options.results;  // kept if given
  const auto outcome = run_worker(launch, context);
  const auto& results = outcome.results;
  const auto points = pingpong_points(results, outcome.results_path.string());
  const auto segments = measure::fit_alpha_beta(points, options.boundaries, weighting);

  measure::CalibrationInput input;
  input.name = options.name;
  input.host = results.provenance.host_name;
  input.date = results.provenance.date;
  for (const auto& entry : results.benchmarks) {
    if (const auto transport = entry.labels.find("transport"); transport != entry.labels.end()) {
      input.transport = transport->second + ", " + buffers;
      break;
    }
  }
  input.ranks = options.ranks;
  input.nodes = options.nodes;
  input.cpu = measure::read_cpu_facts();
  input.segments = segments;
  context.out << "MPI ping-pong:\n";
  print_fit(context.out, points, segments, options.weighting);

  // The threads executor's messages: the same fit on an in-process ping-pong.
  context.err << "calibrate: threads ping-pong" << std::endl;
  const auto thread_points = measure::threads_pingpong(threads_pingpong_options(options));
  const auto thread_segments = measure::fit_alpha_beta(thread_points, options.boundaries, weighting);
  measure::CalibrationInput threads_input = input;
  threads_input.name = options.name + "-threads";
  threads_input.ranks = 2;
  threads_input.benchmark = "threads ping-pong";
  threads_input.link_name = "threads-in-process";
  threads_input.transport = "dsgd's threads executor: a copy between buffers and a wake-up, in one process; " + buffers;
  threads_input.segments = thread_segments;
  context.out << "threads ping-pong:\n";
  print_fit(context.out, thread_points, thread_segments, options.weighting);

  const auto loaded = calibrate_loaded_links(context, options, input, threads_input, weighting);
  const auto kernels = measure::time_kernel_classes(options.kernels, options.kernel_retries, context.err, &context.out);
  const auto waiting = calibrate_waiting(context, options, where);
  write_calibrated(context, options.out, measure::calibrated_platform(input), kernels, waiting.mpi, loaded.mpi, where);
  write_calibrated(context, options.threads_path(), measure::calibrated_platform(threads_input), kernels,
                   waiting.threads, loaded.threads, where);
}

}  // namespace

void register_calibrate_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<CalibrateOptions>();
  auto boundaries = std::make_shared<std::vector<double>>(options->boundaries);
  auto* command = app.add_subcommand(
      "calibrate",
      "Measure MPI and threads ping-pong and the kernel classes on this machine, write the platforms validate uses");
  command->add_option("--ranks", options->ranks, "MPI ranks to start (ping-pong between ranks 0 and 1)")
      ->capture_default_str();
  command->add_option("--out", options->out, "Platform file to write")->capture_default_str();
  command->add_option("--name", options->name, "The platform's name")->capture_default_str();
  command->add_option("--min-bytes", options->min_bytes, "Smallest ping-pong message")->capture_default_str();
  command->add_option("--max-bytes", options->max_bytes, "Largest ping-pong message")->capture_default_str();
  command->add_option("--rounds", options->rounds, "Timed sweeps over all sizes")->capture_default_str();
  command
      ->add_option("--pool-bytes", options->pool_bytes,
                   "Ping-pong buffers cycled through, so messages start cold in memory as training's do (default: "
                   "twice the last-level cache; 0: one warm buffer)")
      ->capture_default_str();
  command->add_option("--boundaries", *boundaries, "Segment boundaries in bytes (a fit per segment)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--nodes", options->nodes, "Hosts in the platform (default: this machine's physical cores)");
  command->add_option("--weighting", options->weighting, "Least squares on 'relative' or 'absolute' error")
      ->capture_default_str();
  command->add_option("--results", options->results, "Also keep the ping-pong results (JSON) here");
  command->add_option("--dsgd-mpi", options->worker, "The dsgd-mpi executable (default: beside dsgd)");
  command->add_option("--timeout", options->timeout_s, "Seconds before the ping-pong run is killed")
      ->capture_default_str();
  command->add_option("--threads-out", options->threads_out,
                      "Platform file for threads runs (default: --out with -threads before .json)");
  command->add_flag("--kernels-only", options->kernels_only,
                    "Only time the kernel classes, into the platform files an earlier calibration wrote");
  command->add_option("--kernel-model", options->kernels.model, "Model whose kernels are timed")->capture_default_str();
  command->add_option("--kernel-batch", options->kernels.batch, "Images per batch of the timed kernels")
      ->capture_default_str();
  command->add_option("--kernel-repetitions", options->kernels.repetitions, "Timed repetitions per kernel class")
      ->capture_default_str();
  command
      ->add_option("--kernel-retries", options->kernel_retries,
                   "Time the kernels again while other programs disturb them")
      ->capture_default_str();
  command->add_option("--kernel-copies", options->kernels.concurrent,
                      "Copies of the kernel benchmark at once (default: one per physical core)");
  command->callback([&context, options, boundaries] {
    options->boundaries = *boundaries;
    calibrate(context, *options);
  });
}

}  // namespace dsgd::app
