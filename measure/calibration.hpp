#pragma once
// Calibrating a platform from measurements (docs/design.md "Calibration, prediction, validation"): the alpha-beta
// fit of ping-pong times per message-size segment, the CPU facts of this machine, and the platform file `dsgd
// calibrate` writes. No MPI here -- the ping-pong itself runs in dsgd-mpi -- so all of it is unit-tested on
// synthetic data.

#include <array>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "platforms/platform.hpp"

namespace dsgd::measure {

// One ping-pong measurement: a message of `bytes` went there and back in `round_trip_s` (a median of many).
struct PingPongPoint {
  double bytes = 0;
  double round_trip_s = 0;
};

// How points count in the least-squares fit.
enum class FitWeighting {
  kAbsolute,  // ordinary least squares on seconds, as SimGrid's calibration scripts: the largest sizes dominate
  kRelative,  // each point weighted by 1/T^2 (least squares on relative error): every size counts alike
};

// The alpha-beta model of one message-size segment, fitted on round-trip times T(n) = 2 alpha + 2 n beta as
// SimGrid's calibration does: latency = intercept / 2, bandwidth = 2 / slope. The latency is never negative: where
// the unconstrained line crosses zero below the origin (a segment of large messages whose time per byte grows with
// the size), the fit is redone through the origin (alpha = 0) and `note` says so.
struct SegmentFit {
  double from_bytes = 0;  // the segment [from_bytes, to_bytes) as asked; to_bytes is infinity for the last one
  double to_bytes = 0;
  double min_bytes = 0;  // the smallest and largest sizes measured in it
  double max_bytes = 0;
  std::size_t points = 0;
  double intercept_s = 0;            // 2 alpha
  double slope_s_per_byte = 0;       // 2 beta
  double latency_s = 0;              // alpha
  double bandwidth_Bps = 0;          // 1 / beta; infinity when the slope is not positive
  double rms_relative_residual = 0;  // sqrt(mean(((fit - measured) / measured)^2)) over the segment's points
  double max_relative_residual = 0;  // max |fit - measured| / measured
  bool through_origin = false;       // refitted with alpha = 0 because the free intercept was negative
  std::string note;                  // why, with the free intercept; empty for an ordinary fit

  // The fitted one-way time of an n-byte message, alpha + n beta.
  double one_way_s(double bytes) const { return (intercept_s + slope_s_per_byte * bytes) / 2; }
};

// Where the alpha and beta of shared-memory MPI change on this project's machine (Open MPI 4.1's vader transport;
// AMD EPYC with 32 KiB L1d and 1 MiB L2 per core and a 32 MiB shared L3), in bytes. A ping-pong of n bytes streams
// 2n (the sender's buffer and the receiver's):
//   257 B    vader sends payloads up to 256 B inline in its fragment (btl_vader_max_inline_send), larger ones by a
//            second copy: on an Intel Xeon host the round trip jumps by half from 256 to 512 B
//   4044 B   the eager limit: payloads up to 4040 B go eager, from 4048 B rendezvous
//   64 KiB   from here the copy, not the rendezvous handshake, dominates
//   512 KiB  2n outgrows a core's L2
//   4 MiB    measured: the time per byte keeps rising through the L3; a boundary here keeps each line within a few
//            percent of the ping-pong (tests/simulate/calibration_roundtrip_test.cpp)
//   16 MiB   2n outgrows the L3: memory speed, the regime of large gradients
// dsgd calibrate fits these segments unless told otherwise (--boundaries).
inline constexpr std::array<double, 6> kDefaultSegmentBoundaries = {257, 4044, 65536, 524288, 4194304, 16777216};

// Splits `points` at `boundaries_bytes` (strictly ascending, positive; a point exactly at a boundary belongs to the
// segment above it) and fits a line to each segment that has at least two distinct sizes; segments with fewer are
// left out. Throws InputError on bad boundaries, a point with non-positive time or negative size, or when no
// segment has two sizes.
std::vector<SegmentFit> fit_alpha_beta(const std::vector<PingPongPoint>& points,
                                       const std::vector<double>& boundaries_bytes,
                                       FitWeighting weighting = FitWeighting::kRelative);

// "8 B", "4000 B", "4 KiB", "64 MiB": exact binary units where they divide evenly.
std::string bytes_text(double bytes);

// One line per segment: "8 B .. 4000 B (12 sizes): alpha 0.21 us, bandwidth 4.10 GB/s, residual rms 2.1% max 4.0%",
// followed by the fit's note, if any.
std::string describe(const SegmentFit& fit);

// --- this machine's CPU -------------------------------------------------------------------------------------------

// What /proc/cpuinfo says about the processor (of its first entry, and core counts over all entries).
struct CpuFacts {
  std::string model;               // "model name"
  std::string vendor;              // "vendor_id": GenuineIntel, AuthenticAMD
  int family = 0;                  // "cpu family"
  double clock_Hz = 0;             // "cpu MHz" x 1e6 (0 if absent)
  int logical_cores = 0;           // "processor" entries
  int physical_cores = 0;          // distinct ("physical id", "core id") pairs; logical_cores if not given
  std::vector<std::string> flags;  // all of "flags"

  bool has(std::string_view flag) const;
};

// Parses the text of /proc/cpuinfo. Missing fields stay empty / zero.
CpuFacts parse_cpuinfo(std::string_view text);

// Reads /proc/cpuinfo (empty facts if it cannot be read: not Linux).
CpuFacts read_cpu_facts();

// Single-precision peak per core, derived from the vector extensions, with the reasoning as a source text.
struct CorePeak {
  int vector_width_bits = 0;
  double sp_flops_per_cycle = 0;
  std::string width_source;
  std::string per_cycle_source;
};

// 512/256/128-bit vectors from avx512f / avx(2) / sse; lanes = datapath bits / 32 (AMD family 25, Zen 3/4,
// executes 512-bit instructions on 256-bit datapaths); 2 vector FMA pipes per core, assumed (no /proc field says
// it; true of Intel server cores since Haswell and of AMD Zen); x 2 if the core has FMA.
CorePeak derive_core_peak(const CpuFacts& cpu);

// --- the platform file ----------------------------------------------------------------------------------------------

struct CalibrationInput {
  std::string name = "this-machine";        // the platform's name
  std::string host;                         // where it was measured
  std::string date;                         // when (ISO 8601)
  std::string transport;                    // e.g. "Open MPI v4.1.4, shared memory between ranks"
  std::string benchmark = "MPI ping-pong";  // how the link was measured, for sources
  std::string link_name = "mpi-shared-memory";
  int ranks = 2;  // of the ping-pong run
  int nodes = 0;  // hosts of the platform; 0: this machine's physical cores
  CpuFacts cpu;
  std::vector<SegmentFit> segments;  // ascending, from fit_alpha_beta
};

// This machine as a platform for validating native runs against simulation: `nodes` single-core hosts (one per
// rank, each one core of this machine, its peak derived from /proc/cpuinfo) on a star whose link is piecewise, one
// link segment per fitted segment (min_bytes = the segment's lower boundary, the first 0; a fit with a non-positive
// slope, whose bandwidth would be unbounded, is left out and the segment below it extends over its sizes). The
// link's representative latency is the smallest-message segment's (the first with a positive latency), its
// bandwidth the largest-message segment's; every number cites the measurement or the derivation. Throws
// InputError if the segments give no positive latency or bandwidth, or the CPU facts lack a clock, and if the
// result does not pass platforms::parse_platform.
platforms::Platform calibrated_platform(const CalibrationInput& input);

// The platform's link alone, as calibrated_platform builds it: the loaded link of a shared chip is fitted the same
// way from a ping-pong beside computing ranks. Throws InputError if the segments give no positive latency or
// bandwidth.
platforms::Link calibrated_link(const CalibrationInput& input);

// Writes `platform` as JSON (dsgd-platform/1) atomically, after checking that it reads back (parse_platform), so a
// file that would not load is never written. Throws InputError / IoError.
void write_platform_file(const std::filesystem::path& path, const platforms::Platform& platform);

}  // namespace dsgd::measure
