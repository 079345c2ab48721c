#include "measure/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <utility>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "platforms/loader.hpp"

namespace dsgd::measure {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Weighted least squares of y = a + b x over the points, on centred data for numerical stability.
std::pair<double, double> fit_line(const std::vector<PingPongPoint>& points, FitWeighting weighting) {
  double weight_sum = 0;
  double x_mean = 0;
  double y_mean = 0;
  for (const auto& p : points) {
    const double w = weighting == FitWeighting::kRelative ? 1.0 / (p.round_trip_s * p.round_trip_s) : 1.0;
    weight_sum += w;
    x_mean += w * p.bytes;
    y_mean += w * p.round_trip_s;
  }
  x_mean /= weight_sum;
  y_mean /= weight_sum;
  double sxx = 0;
  double sxy = 0;
  for (const auto& p : points) {
    const double w = weighting == FitWeighting::kRelative ? 1.0 / (p.round_trip_s * p.round_trip_s) : 1.0;
    sxx += w * (p.bytes - x_mean) * (p.bytes - x_mean);
    sxy += w * (p.bytes - x_mean) * (p.round_trip_s - y_mean);
  }
  const double slope = sxy / sxx;
  return {y_mean - slope * x_mean, slope};
}

// Weighted least squares of y = b x (no intercept).
double fit_through_origin(const std::vector<PingPongPoint>& points, FitWeighting weighting) {
  double sxy = 0;
  double sxx = 0;
  for (const auto& p : points) {
    const double w = weighting == FitWeighting::kRelative ? 1.0 / (p.round_trip_s * p.round_trip_s) : 1.0;
    sxy += w * p.bytes * p.round_trip_s;
    sxx += w * p.bytes * p.bytes;
  }
  return sxy / sxx;
}

SegmentFit fit_segment(const std::vector<PingPongPoint>& points, double from, double to, FitWeighting weighting) {
  SegmentFit fit;
  fit.from_bytes = from;
  fit.to_bytes = to;
  fit.points = points.size();
  fit.min_bytes = points.front().bytes;
  fit.max_bytes = points.back().bytes;
  std::tie(fit.intercept_s, fit.slope_s_per_byte) = fit_line(points, weighting);
  if (fit.intercept_s < 0) {
    // A negative latency is no model of a link: the segment's time per byte grows with the size, so its line
    // reaches below the origin. Least squares with alpha = 0 instead: slope = sum(w x y) / sum(w x^2).
    fit.note = "the free fit's intercept was negative (" + format("%.3g", fit.intercept_s / 2 * 1e6) +
               " us one way); refitted through the origin, alpha = 0";
    fit.through_origin = true;
    fit.intercept_s = 0;
    fit.slope_s_per_byte = fit_through_origin(points, weighting);
  }
  fit.latency_s = fit.intercept_s / 2;
  fit.bandwidth_Bps = fit.slope_s_per_byte > 0 ? 2 / fit.slope_s_per_byte : kInfinity;
  double squares = 0;
  for (const auto& p : points) {
    const double relative = (fit.intercept_s + fit.slope_s_per_byte * p.bytes - p.round_trip_s) / p.round_trip_s;
    squares += relative * relative;
    fit.max_relative_residual = std::max(fit.max_relative_residual, std::abs(relative));
  }
  fit.rms_relative_residual = std::sqrt(squares / static_cast<double>(points.size()));
  return fit;
}

std::string percent(double fraction) { return format("%.1f%%", 100 * fraction); }

std::string trim(std::string text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const auto end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

}  // namespace

std::vector<SegmentFit> fit_alpha_beta(const std::vector<PingPongPoint>& points,
                                       const std::vector<double>& boundaries_bytes, FitWeighting weighting) {
  for (std::size_t i = 0; i < boundaries_bytes.size(); ++i) {
    if (!(boundaries_bytes[i] > 0) || (i > 0 && !(boundaries_bytes[i] > boundaries_bytes[i - 1]))) {
      throw InputError("alpha-beta fit: segment boundaries must be positive and strictly ascending, got " +
                       bytes_text(boundaries_bytes[i]) + " at position " + std::to_string(i + 1));
    }
  }
  for (const auto& p : points) {
    if (!(p.bytes >= 0) || !(p.round_trip_s > 0) || !std::isfinite(p.round_trip_s)) {
      throw InputError("alpha-beta fit: a ping-pong point needs bytes >= 0 and a positive time, got " +
                       format("%g", p.bytes) + " bytes in " + format("%g", p.round_trip_s) + " s");
    }
  }
  std::vector<PingPongPoint> sorted = points;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });

  std::vector<SegmentFit> fits;
  double from = 0;
  for (std::size_t segment = 0; segment <= boundaries_bytes.size(); ++segment) {
    const double to = segment < boundaries_bytes.size() ? boundaries_bytes[segment] : kInfinity;
    std::vector<PingPongPoint> inside;
    std::set<double> sizes;
    for (const auto& p : sorted) {
      if (p.bytes >= from && p.bytes < to) {
        inside.push_back(p);
        sizes.insert(p.bytes);
      }
    }
    if (sizes.size() >= 2) fits.push_back(fit_segment(inside, from, to, weighting));
    from = to;
  }
  if (fits.empty()) {
    throw InputError("alpha-beta fit: no segment holds two distinct message sizes (" + std::to_string(points.size()) +
                     " points, " + std::to_string(boundaries_bytes.size() + 1) + " segments)");
  }
  return fits;
}

std::string bytes_text(double bytes) {
  if (!std::isfinite(bytes)) return "inf";
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = bytes;
  while (unit < 4 && value >= 1024 && std::fmod(value, 1024) == 0) {
    value /= 1024;
    ++unit;
  }
  return format("%.0f", value) + " " + kUnits[unit];
}

std::string describe(const SegmentFit& fit) {
  return bytes_text(fit.min_bytes) + " .. " + bytes_text(fit.max_bytes) + " (" + std::to_string(fit.points) +
         " sizes): alpha " + format("%.3g", fit.latency_s * 1e6) + " us, bandwidth " +
         (std::isfinite(fit.bandwidth_Bps) ? format("%.3g", fit.bandwidth_Bps / 1e9) + " GB/s" : "unbounded") +
         ", residual rms " + percent(fit.rms_relative_residual) + " max " + percent(fit.max_relative_residual) +
         (fit.note.empty() ? "" : " (" + fit.note + ")");
}

// --- CPU facts ------------------------------------------------------------------------------------------------

bool CpuFacts::has(std::string_view flag) const { return std::find(flags.begin(), flags.end(), flag) != flags.end(); }

CpuFacts parse_cpuinfo(std::string_view text) {
  CpuFacts facts;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string physical_id;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "processor") {
      ++facts.logical_cores;
    } else if (key == "model name" && facts.model.empty()) {
      facts.model = value;
    } else if (key == "vendor_id" && facts.vendor.empty()) {
      facts.vendor = value;
    } else if (key == "cpu family" && facts.family == 0) {
      facts.family = std::atoi(value.c_str());
    } else if (key == "cpu MHz" && facts.clock_Hz == 0) {
      facts.clock_Hz = std::strtod(value.c_str(), nullptr) * 1e6;
    } else if (key == "flags" && facts.flags.empty()) {
      std::istringstream flags(value);
      for (std::string flag; flags >> flag;) facts.flags.push_back(flag);
    } else if (key == "physical id") {
      physical_id = value;
    } else if (key == "core id") {
      cores.emplace(physical_id, value);
    }
  }
  facts.physical_cores = cores.empty() ? facts.logical_cores : static_cast<int>(cores.size());
  return facts;
}

CpuFacts read_cpu_facts() {
  std::ifstream in("/proc/cpuinfo");
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_cpuinfo(text.str());
}

CorePeak derive_core_peak(const CpuFacts& cpu) {
  CorePeak peak;
  std::string isa;
  if (cpu.has("avx512f")) {
    peak.vector_width_bits = 512;
    isa = "avx512f";
  } else if (cpu.has("avx2") || cpu.has("avx")) {
    peak.vector_width_bits = 256;
    isa = cpu.has("avx2") ? "avx2" : "avx";
  } else {
    peak.vector_width_bits = 128;
    isa = cpu.has("sse2") ? "sse2" : "no vector flag found; SSE2 is in every x86-64";
  }
  peak.width_source = "/proc/cpuinfo flags: " + isa;

  int datapath_bits = peak.vector_width_bits;
  std::string datapath_note;
  if (cpu.vendor == "AuthenticAMD" && cpu.family == 25 && datapath_bits == 512) {
    datapath_bits = 256;
    datapath_note = " (AMD family 25, Zen 4, executes 512-bit instructions as two 256-bit halves)";
  }
  constexpr int kPipes = 2;
  const int lanes = datapath_bits / 32;
  const int fma = cpu.has("fma") || cpu.has("avx512f") ? 2 : 1;
  peak.sp_flops_per_cycle = static_cast<double>(lanes * kPipes * fma);
  peak.per_cycle_source = "derived: " + std::to_string(kPipes) +
                          " vector FMA pipes per core (assumed: /proc/cpuinfo does not say; true of Intel server cores "
                          "since Haswell and of AMD Zen) x " +
                          std::to_string(lanes) + " single-precision lanes" + datapath_note + " x " +
                          (fma == 2 ? "2 (FMA, /proc/cpuinfo flags)" : "1 (no FMA flag)");
  return peak;
}

// --- the platform ---------------------------------------------------------------------------------------------

namespace {

std::string measured_where(const CalibrationInput& input) {
  return "measured: dsgd calibrate, " + input.benchmark + " between 2 of " + std::to_string(input.ranks) +
         " ranks on " + (input.host.empty() ? std::string("this machine") : input.host) +
         (input.date.empty() ? "" : ", " + input.date) + (input.transport.empty() ? "" : " (" + input.transport + ")");
}

std::string segment_range(const SegmentFit& fit) {
  return bytes_text(fit.min_bytes) + ".." + bytes_text(fit.max_bytes) + " (" + std::to_string(fit.points) +
         " sizes, residual rms " + percent(fit.rms_relative_residual) + ", max " + percent(fit.max_relative_residual) +
         ")";
}

// One link segment per fitted segment with a finite bandwidth, each starting at its fit's lower boundary (the
// first at 0), so that simulating a message of any size uses the fit of the segment it was measured in.
std::vector<platforms::LinkSegment> link_segments(const CalibrationInput& input) {
  std::vector<platforms::LinkSegment> segments;
  for (const auto& fit : input.segments) {
    if (!(fit.slope_s_per_byte > 0) || !std::isfinite(fit.bandwidth_Bps)) continue;
    platforms::LinkSegment segment;
    segment.min_bytes = segments.empty() ? 0 : fit.from_bytes;
    segment.latency_s = fit.latency_s;
    segment.bandwidth_Bps = fit.bandwidth_Bps;
    segment.sources["min_bytes"] =
        segments.empty() ? "modelling choice: the first segment covers every size from 0 (smallest measured: " +
                               bytes_text(fit.min_bytes) + ")"
                         : "modelling choice: a segment boundary of the fit (dsgd calibrate --boundaries)";
    const std::string fitted =
        measured_where(input) + "; least-squares fit of round-trip time over " + segment_range(fit);
    segment.sources["latency_s"] =
        fit.through_origin ? fitted + "; alpha = 0: " + fit.note : fitted + "; alpha = intercept/2";
    segment.sources["bandwidth_Bps"] = fitted + "; 1/beta = 2/slope";
    segments.push_back(std::move(segment));
  }
  return segments;
}

}  // namespace

platforms::Link calibrated_link(const CalibrationInput& input) {
  if (input.segments.empty()) throw InputError("calibration: no fitted segment to build a link from");
  // Latency from the smallest messages (where alpha dominates the time), bandwidth from the largest (where beta
  // does): each is taken where the measurement determines it best.
  const auto latency_fit =
      std::find_if(input.segments.begin(), input.segments.end(), [](const auto& s) { return s.latency_s > 0; });
  const auto bandwidth_fit = std::find_if(input.segments.rbegin(), input.segments.rend(), [](const auto& s) {
    return s.slope_s_per_byte > 0 && std::isfinite(s.bandwidth_Bps);
  });
  if (latency_fit == input.segments.end()) {
    throw InputError("calibration: no segment of the ping-pong fit has a positive latency (intercept)");
  }
  if (bandwidth_fit == input.segments.rend()) {
    throw InputError("calibration: no segment of the ping-pong fit has a positive slope (finite bandwidth)");
  }
  const std::string host = input.host.empty() ? "this machine" : input.host;
  platforms::Link link;
  link.name = input.link_name;
  link.description = input.benchmark + " on " + host + (input.transport.empty() ? "" : " (" + input.transport + ")") +
                     "; alpha-beta per segment:";
  for (const auto& segment : input.segments) link.description += " [" + describe(segment) + "]";
  link.latency_s = latency_fit->latency_s;
  link.bandwidth_Bps = bandwidth_fit->bandwidth_Bps;
  link.sources["latency_s"] = measured_where(input) +
                              "; alpha = intercept/2 of a least-squares fit of round-trip "
                              "time over " +
                              segment_range(*latency_fit) + ", the smallest-message segment with a positive intercept";
  link.sources["bandwidth_Bps"] = measured_where(input) +
                                  "; 1/beta = 2/slope of a least-squares fit of round-trip "
                                  "time over " +
                                  segment_range(*bandwidth_fit) + ", the largest-message segment";
  link.segments = link_segments(input);
  if (link.segments.size() < input.segments.size()) {
    link.description +=
        "; segments with a non-positive slope (unbounded bandwidth) are left out of the link, the "
        "segment below extending over their sizes";
  }
  return link;
}

platforms::Platform calibrated_platform(const CalibrationInput& input) {
  if (input.segments.empty()) throw InputError("calibration: no fitted segment to build a platform from");
  if (!(input.cpu.clock_Hz > 0)) {
    throw InputError("calibration: /proc/cpuinfo gives no clock ('cpu MHz'); cannot derive the peak FLOP rate");
  }
  const std::string host = input.host.empty() ? "this machine" : input.host;
  const int cores = input.cpu.physical_cores > 0 ? input.cpu.physical_cores : 1;
  const int nodes = input.nodes > 0 ? input.nodes : cores;
  const CorePeak peak = derive_core_peak(input.cpu);

  platforms::Platform platform;
  platform.name = input.name;
  platform.description = host + " as " + std::to_string(nodes) +
                         " single-core hosts (one per rank) on a star with the " + input.benchmark + "-fitted link";

  auto& node = platform.nodes;
  node.count = nodes;
  node.sources["count"] =
      input.nodes > 0 ? "modelling choice: --nodes " + std::to_string(nodes) + " given to dsgd calibrate"
                      : "modelling choice: one host per physical core of " + host + " (" + std::to_string(cores) +
                            " in /proc/cpuinfo), so N ranks here compare with N simulated hosts";
  auto& cpu = node.cpu;
  cpu.model = input.cpu.model.empty() ? "unknown CPU" : input.cpu.model;
  cpu.sockets = 1;
  cpu.cores_per_socket = 1;
  cpu.clock_Hz = input.cpu.clock_Hz;
  cpu.vector_width_bits = peak.vector_width_bits;
  cpu.sp_flops_per_cycle_per_core = peak.sp_flops_per_cycle;
  cpu.peak_flops = cpu.clock_Hz * cpu.sp_flops_per_cycle_per_core;
  cpu.sources["model"] = "/proc/cpuinfo model name on " + host;
  cpu.sources["sockets"] = "modelling choice: each host is one core of " + host + " (one rank per core)";
  cpu.sources["cores_per_socket"] = cpu.sources["sockets"];
  cpu.sources["clock_Hz"] = "/proc/cpuinfo cpu MHz on " + host +
                            " (the clock the kernel reports: nominal, no turbo; under a hypervisor the host's rate)";
  cpu.sources["vector_width_bits"] = peak.width_source;
  cpu.sources["sp_flops_per_cycle_per_core"] = peak.per_cycle_source;
  cpu.sources["peak_flops"] =
      "derived: 1 core x " + format("%.6g", cpu.clock_Hz) + " Hz x " + format("%g", cpu.sp_flops_per_cycle_per_core) +
      " FLOP/cycle = " + format("%.4g", cpu.peak_flops) + " FLOP/s (a peak, not a measured rate)";

  platform.network.link = calibrated_link(input);

  platform.network.topology.shape = platforms::StarTopology{};
  platform.network.topology.sources["kind"] =
      "modelling choice: ranks on one machine reach each other through shared memory; a flat star, no backbone "
      "limit (concurrent transfers sharing memory bandwidth are not modelled)";

  platform.noise.distribution = platforms::NoiseDistribution::kNone;
  platform.noise.description = "not measured: dsgd calibrate measures the network (ping-pong) only";

  // The same validation every reader applies; a platform that would not load is a bug here, but say what it is.
  (void)platforms::parse_platform(platforms::to_json(platform), "calibrated platform '" + platform.name + "'");
  return platform;
}

void write_platform_file(const std::filesystem::path& path, const platforms::Platform& platform) {
  const Json json = platforms::to_json(platform);
  (void)platforms::parse_platform(json, path.string());
  write_file_atomically(path, json.dump(2) + "\n");
}

}  // namespace dsgd::measure
