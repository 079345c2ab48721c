#include "measure/calibrate_run.hpp"

#include <algorithm>
#include <optional>
#include <ostream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "measure/datagram_rate.hpp"
#include "measure/kernel_timings.hpp"
#include "measure/threads_pingpong.hpp"
#include "platforms/catalog.hpp"

namespace dsgd::measure {

namespace {

// Each measured size beside its segment's fit, then the fit per segment.
void print_fit(std::ostream& out, std::vector<PingPongPoint> points, const std::vector<SegmentFit>& segments,
               FitWeighting weighting) {
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  out << format("%12s %16s %14s %10s\n", "bytes", "one way us", "fitted us", "error");
  for (const auto& point : points) {
    const auto segment = std::find_if(segments.begin(), segments.end(), [&](const auto& s) {
      return point.bytes >= s.from_bytes && point.bytes < s.to_bytes;
    });
    const double measured = point.round_trip_s / 2;
    if (segment == segments.end()) {
      out << format("%12.0f %16.3f %14s %10s\n", point.bytes, measured * 1e6, "-", "-");
    } else {
      const double fitted = segment->one_way_s(point.bytes);
      out << format("%12.0f %16.3f %14.3f %9.1f%%\n", point.bytes, measured * 1e6, fitted * 1e6,
                    100 * (fitted - measured) / measured);
    }
  }
  out << "alpha-beta fit per segment (" << to_string(weighting)
      << " least squares, round trip = 2 alpha + 2 n beta):\n";
  for (const auto& segment : segments) out << "  " << describe(segment) << '\n';
}

void print_link(std::ostream& out, const std::string& path, const platforms::Platform& platform) {
  const auto& link = platform.network.link;
  out << format(
      "wrote %s: %d hosts, link latency %.3g us, bandwidth %.3g GB/s (%zu segments), peak %.3g GFLOP/s "
      "per host\n",
      path.c_str(), platform.nodes.count, link.latency_s * 1e6, link.bandwidth_Bps / 1e9, link.segments.size(),
      platform.nodes.cpu.peak_flops / 1e9);
  // What the simulator will charge per size: each segment's alpha and bandwidth from its lower boundary on.
  for (const auto& segment : link.segments) {
    out << format("  from %12s: latency %.3g us, bandwidth %.3g GB/s\n", bytes_text(segment.min_bytes).c_str(),
                  segment.latency_s * 1e6, segment.bandwidth_Bps / 1e9);
  }
}

// The share of a core a waiting rank takes (platforms::SharedChip::waiting_share) on one executor, and its source.
struct MeasuredWaiting {
  double share = 0;
  std::string source;
};

MeasuredWaiting describe_waiting(const std::string& executor, const WaitingShare& measured, const std::string& where) {
  return {std::min(1.0, measured.share()),
          format("measured by dsgd calibrate on %s: rank 0 of %d %s ranks waited %.3f s for messages while the other "
                 "%d computed, and took %.3f s of CPU meanwhile",
                 where.c_str(), measured.computing + 1, executor.c_str(), measured.wall_s, measured.computing,
                 measured.cpu_s)};
}

struct WaitingShares {
  MeasuredWaiting mpi;
  MeasuredWaiting threads;
};

// Measured with one rank more than the cores: the oversubscribed worlds (a master and a worker per core) are where a
// waiting rank's CPU time comes out of the computing ranks'.
WaitingShares calibrate_waiting(const MpiRuns& mpi, const std::string& where, std::ostream& out, std::ostream& err) {
  constexpr double kWaitingSeconds = 2;
  const int ranks = std::max(1, read_cpu_facts().physical_cores) + 1;
  err << "calibrate: the share of a core a waiting rank takes, " << ranks << " ranks" << std::endl;
  const WaitingShares shares{describe_waiting("MPI", mpi.waiting(ranks, kWaitingSeconds), where),
                             describe_waiting("threads", threads_waiting_share(ranks, kWaitingSeconds), where)};
  out << format("waiting rank's share of a core, %d ranks on %d cores: MPI %.3f, threads %.3f\n", ranks, ranks - 1,
                shares.mpi.share, shares.threads.share);
  return shares;
}

// The threads ping-pong over the plan's sizes.
ThreadsPingPongOptions threads_pingpong_options(const CalibrationPlan& plan) {
  ThreadsPingPongOptions pingpong;
  pingpong.min_bytes = plan.min_bytes;
  pingpong.max_bytes = plan.max_bytes;
  pingpong.rounds = plan.rounds;
  pingpong.pool_bytes = static_cast<std::size_t>(plan.pool_bytes);
  return pingpong;
}

// The links of both executors between two ranks while the chip's other cores compute
// (platforms::SharedChip::loaded_link): the ping-pongs again, with one more rank than the cores, the ranks beside
// the pair computing. None on a single core (every transfer there shares its core already).
struct LoadedLinks {
  std::optional<platforms::Link> mpi;
  std::optional<platforms::Link> threads;
};

LoadedLinks calibrate_loaded_links(const CalibrationPlan& plan, const MpiRuns& mpi, const CalibrationInput& mpi_input,
                                   const CalibrationInput& threads_input, std::ostream& out, std::ostream& err) {
  const int busy_ranks = read_cpu_facts().physical_cores - 1;
  if (busy_ranks < 1) return {};
  const std::string beside = " while " + std::to_string(busy_ranks) + " more rank" + (busy_ranks > 1 ? "s" : "") +
                             " computed (a busy loop), mean round trips";
  err << "calibrate: the ping-pongs" << beside << std::endl;
  // The link of `input`'s executor fitted to `points`, printed as `executor`'s.
  const auto loaded_link = [&](CalibrationInput input, const std::vector<PingPongPoint>& points,
                               const std::string& executor) {
    input.ranks = busy_ranks + 2;
    input.benchmark += beside;
    input.link_name += "-loaded";
    input.segments = fit_alpha_beta(points, plan.boundaries, plan.weighting);
    out << executor << " ping-pong" << beside << ":\n";
    print_fit(out, points, input.segments, plan.weighting);
    return calibrated_link(input);
  };
  // The mean, not the median: beside computing ranks the operating system now and then preempts one of the pair
  // for a time slice, and the training's messages pay those slices too (docs/validation.md, "MPI waits that sleep,
  // and the loaded link").
  LoadedLinks links;
  links.mpi = loaded_link(mpi_input, mpi.pingpong(busy_ranks + 2, true).points, "MPI");
  auto pingpong = threads_pingpong_options(plan);
  pingpong.busy_ranks = busy_ranks;
  pingpong.mean = true;
  links.threads = loaded_link(threads_input, threads_pingpong(pingpong), "threads");
  return links;
}

// Writes `platform` with the kernel timings, the chip's measured waiting share, the CPU's datagram rate and the
// loaded link, if measured (else the platform's stays), to `path`.
void write_calibrated(const std::string& path, platforms::Platform platform, const KernelTimings& kernels,
                      const MeasuredWaiting& waiting, const DatagramRate& datagrams,
                      const std::optional<platforms::Link>& loaded_link, const std::string& where, std::ostream& out) {
  platform = with_kernel_timings(std::move(platform), kernels, where);
  platform.nodes.cpu.datagram_Bps = datagrams.bytes_per_s;
  platform.nodes.cpu.sources["datagram_Bps"] = datagrams.source;
  if (auto& chip = platform.nodes.shared_chip) {
    chip->waiting_share = waiting.share;
    chip->sources["waiting_share"] = waiting.source;
    if (loaded_link) chip->loaded_link = loaded_link;
  }
  write_platform_file(path, platform);
  print_link(out, path, platform);
  const auto print = [&](const char* what, const platforms::KernelEfficiency& efficiency) {
    std::string line = what;
    for (const auto& [kernel_class, fraction] : efficiency.by_class) {
      line += format(" %s %.3g;", kernel_class.c_str(), fraction);
    }
    out << line << '\n';
  };
  print("  kernel efficiency, every core busy:", platform.nodes.cpu.efficiency);
  if (platform.nodes.shared_chip) print("  kernel efficiency, one core alone:", platform.nodes.shared_chip->alone);
}

}  // namespace

std::string_view to_string(FitWeighting weighting) {
  return weighting == FitWeighting::kAbsolute ? "absolute" : "relative";
}

FitWeighting fit_weighting_from_string(std::string_view name) {
  if (name == "absolute") return FitWeighting::kAbsolute;
  if (name == "relative") return FitWeighting::kRelative;
  throw UnknownNameError("fit weighting", name, {"absolute", "relative"});
}

std::string CalibrationPlan::threads_path() const {
  if (!threads_out.empty()) return threads_out;
  const std::string stem = out.size() > 5 && out.ends_with(".json") ? out.substr(0, out.size() - 5) : out;
  return stem + "-threads.json";
}

std::vector<std::string> mpi_pingpong_arguments(const CalibrationPlan& plan, bool busy) {
  std::vector<std::string> arguments{"pingpong",
                                     "--min-bytes",
                                     significant(plan.min_bytes, 17),
                                     "--max-bytes",
                                     significant(plan.max_bytes, 17),
                                     "--rounds",
                                     std::to_string(plan.rounds),
                                     "--pool-bytes",
                                     significant(plan.pool_bytes, 17),
                                     "--quiet"};
  if (busy) arguments.push_back("--busy");
  return arguments;
}

std::vector<std::string> mpi_waiting_arguments(double seconds) {
  return {"waiting", "--seconds", significant(seconds, 17)};
}

void calibrate(const CalibrationPlan& plan, const MpiRuns& mpi, const std::string& where, std::ostream& out,
               std::ostream& err) {
  if (plan.ranks < 2) {
    throw InputError("calibrate: --ranks must be at least 2 (the ping-pong needs two), got " +
                     std::to_string(plan.ranks));
  }
  if (plan.nodes < 0) throw InputError("calibrate: --nodes must be positive");
  if (!(plan.pool_bytes >= 0)) throw InputError("calibrate: --pool-bytes must be >= 0");
  if (plan.kernels_only) {
    // New kernel efficiencies into the platforms an earlier calibration wrote; their links stay.
    const auto kernels = time_kernel_classes(plan.kernels, plan.kernel_retries, err, &out);
    const auto waiting = calibrate_waiting(mpi, where, out, err);
    const auto datagrams = measure_datagram_rate(where);
    write_calibrated(plan.out, platforms::load_platform(plan.out), kernels, waiting.mpi, datagrams, std::nullopt, where,
                     out);
    write_calibrated(plan.threads_path(), platforms::load_platform(plan.threads_path()), kernels, waiting.threads,
                     datagrams, std::nullopt, where, out);
    return;
  }

  // Which buffers both ping-pongs sent from, for the links' sources.
  const std::string buffers = "messages " + pingpong_buffers_text(static_cast<std::size_t>(plan.pool_bytes));
  const auto measured = mpi.pingpong(plan.ranks, false);
  CalibrationInput input;
  input.name = plan.name;
  input.host = measured.host;
  input.date = measured.date;
  if (!measured.transport.empty()) input.transport = measured.transport + ", " + buffers;
  input.ranks = plan.ranks;
  input.nodes = plan.nodes;
  input.cpu = read_cpu_facts();
  input.segments = fit_alpha_beta(measured.points, plan.boundaries, plan.weighting);
  out << "MPI ping-pong:\n";
  print_fit(out, measured.points, input.segments, plan.weighting);

  // The threads executor's messages: the same fit on an in-process ping-pong.
  err << "calibrate: threads ping-pong" << std::endl;
  const auto thread_points = threads_pingpong(threads_pingpong_options(plan));
  CalibrationInput threads_input = input;
  threads_input.name = plan.name + "-threads";
  threads_input.ranks = 2;
  threads_input.benchmark = "threads ping-pong";
  threads_input.link_name = "threads-in-process";
  threads_input.transport = "dsgd's threads executor: a copy between buffers and a wake-up, in one process; " + buffers;
  threads_input.segments = fit_alpha_beta(thread_points, plan.boundaries, plan.weighting);
  out << "threads ping-pong:\n";
  print_fit(out, thread_points, threads_input.segments, plan.weighting);

  const auto loaded = calibrate_loaded_links(plan, mpi, input, threads_input, out, err);
  const auto kernels = time_kernel_classes(plan.kernels, plan.kernel_retries, err, &out);
  const auto waiting = calibrate_waiting(mpi, where, out, err);
  const auto datagrams = measure_datagram_rate(where);
  write_calibrated(plan.out, calibrated_platform(input), kernels, waiting.mpi, datagrams, loaded.mpi, where, out);
  write_calibrated(plan.threads_path(), calibrated_platform(threads_input), kernels, waiting.threads, datagrams,
                   loaded.threads, where, out);
}

}  // namespace dsgd::measure
