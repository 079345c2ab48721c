// `dsgd calibrate`: measures this machine's MPI ping-pong with the dsgd-mpi worker (under mpirun, since dsgd itself
// links SimGrid and never OpenMPI), fits alpha and beta per message-size segment, and writes a platform file the
// simulator can load (DESIGN.md "Calibration, prediction, validation").

#include <algorithm>
#include <cstdio>

#include "app/commands.hpp"
#include "app/mpi_worker.hpp"
#include "core/error.hpp"
#include "measure/calibration.hpp"
#include "measure/mpi/launch.hpp"
#include "platforms/loader.hpp"

namespace dsgd::app {

namespace {

struct CalibrateOptions {
  int ranks = 2;
  std::string out = "platforms/this-machine.json";
  std::string name = "this-machine";
  double min_bytes = 8;
  double max_bytes = 64.0 * 1024 * 1024;
  int rounds = 15;
  std::vector<double> boundaries{measure::kDefaultSegmentBoundaries.begin(),  // why these: measure/calibration.hpp
                                 measure::kDefaultSegmentBoundaries.end()};
  int nodes = 0;
  std::string weighting = "relative";
  std::string results;  // keep dsgd-mpi's ping-pong results here
  std::string worker;   // dsgd-mpi; default: beside this executable
  int timeout_s = 600;
};

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::vector<measure::PingPongPoint> pingpong_points(const reports::Results& results, const std::string& source) {
  std::vector<measure::PingPongPoint> points;
  for (const auto& entry : results.benchmarks) {
    if (entry.name.rfind("pingpong/", 0) != 0) continue;
    const auto bytes = entry.counters.find("bytes");
    const auto round_trip = entry.counters.find("round_trip_s");
    if (bytes == entry.counters.end() || round_trip == entry.counters.end()) {
      throw InputError(source + ": entry '" + entry.name + "' lacks the bytes or round_trip_s counter");
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

void calibrate(Context& context, const CalibrateOptions& options) {
  if (options.ranks < 2) {
    throw InputError("calibrate: --ranks must be at least 2 (the ping-pong needs two), got " +
                     std::to_string(options.ranks));
  }
  if (options.nodes < 0) throw InputError("calibrate: --nodes must be positive");
  const auto weighting =
      options.weighting == "absolute" ? measure::FitWeighting::kAbsolute : measure::FitWeighting::kRelative;
  if (options.weighting != "absolute" && options.weighting != "relative") {
    throw UnknownNameError("fit weighting", options.weighting, {"absolute", "relative"});
  }
  WorkerLaunch launch;
  launch.command = "calibrate";
  launch.what = "the ping-pong";
  launch.ranks = options.ranks;
  launch.program = {options.worker.empty() ? measure::mpi::worker_executable().string() : options.worker,
                    "pingpong", "--min-bytes", number_text(options.min_bytes), "--max-bytes",
                    number_text(options.max_bytes), "--rounds", std::to_string(options.rounds), "--quiet"};
  launch.results = options.results;  // kept if given
  launch.timeout_s = options.timeout_s;
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
      input.transport = transport->second;
      break;
    }
  }
  input.ranks = options.ranks;
  input.nodes = options.nodes;
  input.cpu = measure::read_cpu_facts();
  input.segments = segments;
  const auto platform = measure::calibrated_platform(input);
  measure::write_platform_file(options.out, platform);

  print_fit(context.out, points, segments, options.weighting);
  const auto& link = platform.network.link;
  char line[256];
  std::snprintf(line, sizeof line,
                "wrote %s: %d hosts, link latency %.3g us, bandwidth %.3g GB/s (%zu segments), peak %.3g GFLOP/s "
                "per host\n",
                options.out.c_str(), platform.nodes.count, link.latency_s * 1e6, link.bandwidth_Bps / 1e9,
                link.segments.size(), platform.nodes.cpu.peak_flops / 1e9);
  context.out << line;
  // What the simulator will charge per size: each segment's alpha and bandwidth from its lower boundary on.
  for (const auto& segment : link.segments) {
    std::snprintf(line, sizeof line, "  from %12s: latency %.3g us, bandwidth %.3g GB/s\n",
                  measure::bytes_text(segment.min_bytes).c_str(), segment.latency_s * 1e6,
                  segment.bandwidth_Bps / 1e9);
    context.out << line;
  }
}

}  // namespace

void register_calibrate_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<CalibrateOptions>();
  auto boundaries = std::make_shared<std::vector<double>>(options->boundaries);
  auto* command = app.add_subcommand(
      "calibrate", "Measure MPI ping-pong on this machine (dsgd-mpi under mpirun), fit alpha-beta, write a platform");
  command->add_option("--ranks", options->ranks, "MPI ranks to start (ping-pong between ranks 0 and 1)")
      ->capture_default_str();
  command->add_option("--out", options->out, "Platform file to write")->capture_default_str();
  command->add_option("--name", options->name, "The platform's name")->capture_default_str();
  command->add_option("--min-bytes", options->min_bytes, "Smallest ping-pong message")->capture_default_str();
  command->add_option("--max-bytes", options->max_bytes, "Largest ping-pong message")->capture_default_str();
  command->add_option("--rounds", options->rounds, "Timed sweeps over all sizes")->capture_default_str();
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
  command->callback([&context, options, boundaries] {
    options->boundaries = *boundaries;
    calibrate(context, *options);
  });
}

}  // namespace dsgd::app
