#pragma once
// A many-core chip as a 2-D mesh, built directly with SimGrid's s4u API (seed 003, Sallinen et al. IPDPS 2016,
// "future scalability": 2 cores per mesh stop, 2-cycle hops, 64-byte links, 1.8 GHz), and the cost of sharing one
// model among its cores by a pattern described in numbers only: each core computes on a batch of samples, pulls
// the model lines those samples read from the cores that last wrote them (coherence misses), then takes ownership
// of every line of the model to add its dense private gradient. Those numbers are HogBatch's
// (algorithms/shared_memory), but nothing here names a method. docs/shared-memory-mesh.md gives the model, the
// source of every number and what is simplified.
//
// Every simulation runs in a forked child process that starts its own SimGrid engine: SimGrid allows one engine
// per process (see simulate/simgrid/executor.hpp), so these functions can be called any number of times, also in a
// process that runs the executor's simulations. SimGrid's types stay out of this header.

#include <cstdint>
#include <vector>

#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

// The chip. Stop s sits at (s % columns, s / columns) and holds cores [s c, (s + 1) c) for c = cores_per_stop.
// Adjacent stops are joined by split-duplex links (each direction link_bytes_per_cycle x clock_Hz bytes/s,
// hop_cycles of latency); the cores of one stop talk through the stop's local split-duplex link (local_cycles,
// the same bandwidth). Routes are dimension-ordered: along the row first (X), then along the column (Y).
struct MeshOptions {
  int cores = 64;
  int cores_per_stop = 2;
  int columns = 8;
  int rows = 4;
  double clock_Hz = 1.8e9;
  // Seed 003 says "link bandwidth of 64 bytes/s", read as 64 bytes per cycle (115.2 GB/s per direction at 1.8 GHz).
  double link_bytes_per_cycle = 64;
  double hop_cycles = 2;
  double local_cycles = 1;  // assumed: seed 003 gives no number for two cores of one stop
};

// Seed 003's chip of `cores` cores: 2 cores per stop (1 for a single core), stops in the most nearly square grid
// with columns >= rows (64 cores: 8 x 4 stops, 128 cores: 8 x 8), seed 003's clock, links and hops. A smaller chip
// is the corner of a larger one that its cores would use: with XY routes their traffic never leaves it.
// Throws InputError for cores < 1 or an odd number above 1.
MeshOptions seed003_mesh(int cores);

// Throws InputError (one line) unless cores >= 1, cores_per_stop >= 1, cores a multiple of cores_per_stop,
// columns, rows >= 1, cores / cores_per_stop == columns x rows, and clock, bandwidth > 0, hop and local cycles >= 0.
void check_mesh(const MeshOptions& mesh);

// The stop of core `core` (0-based).
MeshStop core_stop(const MeshOptions& mesh, int core);

// The dimension-ordered route between two stops: one hop per pair of adjacent stops, X first. Corner to corner:
// columns - 1 + rows - 1 hops. Throws InputError for a stop outside the grid.
std::vector<MeshHop> mesh_route(const MeshOptions& mesh, MeshStop from, MeshStop to);

// How SimGrid shares the links among the transfers a core waits for at once (the P - 1 of a read or write phase).
//  * kFlowPerOwner: every transfer is its own flow of SimGrid's CM02 model, sharing each link max-min fairly with
//    every other flow (latency + bytes / bandwidth alone): the model as stated, and the nearer to a mesh router's
//    per-packet arbitration. Its solver redoes the whole mesh at every flow's end: ~1.3 s of wall time for 64 cores,
//    45-70 s for 128.
//  * kTaskPerPhase: the transfers of one phase are one SimGrid parallel task (ptask_L07 model), whose transfers all
//    progress at one pace, set by its most contended link, sharing links max-min fairly with the other cores'
//    phases. It ends when its last byte arrives, as the phase does; but pacing its transfers together gives the
//    slow ones (long routes through busy links) bandwidth that per-flow sharing leaves to the quick ones, so phases
//    end sooner: on seed 003's rcv1-like pattern the pass is 11% shorter at 32 cores, 21% at 64, 15% at 128
//    (docs/shared-memory-mesh.md). ~1 s of wall time for 128 cores, hence the default.
// A lone transfer costs latency + bytes / bandwidth in both.
enum class TransferModel { kTaskPerPhase, kFlowPerOwner };

// One transfer of `bytes` from core `from_core` to core `to_core` (different cores), started at `start_s`.
struct MeshTransfer {
  int from_core = 0;
  int to_core = 1;
  std::uint64_t bytes = 64;
  double start_s = 0;
};

// Simulates `transfers` on the chip (each one its own activity, links shared max-min fairly) and returns each
// one's end time in simulated seconds. A lone transfer between stops h hops apart takes h x hop_cycles / clock_Hz +
// bytes / (link_bytes_per_cycle x clock_Hz); within a stop, local_cycles / clock_Hz + the same. Throws InputError
// for a bad mesh or transfer, InternalError if the simulation fails.
std::vector<double> simulate_mesh_transfers(const MeshOptions& mesh, const std::vector<MeshTransfer>& transfers,
                                            TransferModel model = TransferModel::kTaskPerPhase);

// What every core does, in numbers (see the file comment). For HogBatch on a data set: its rows, mean non-zeros
// per row and features, and HS, the samples a thread accumulates before it writes.
struct SharingPattern {
  long long rows = 0;      // samples of the data set, split evenly over the cores
  double nnz_per_row = 0;  // mean non-zeros per sample
  long long features = 0;  // d: values of the model
  int batch_rows = 0;      // HS: samples a core processes between two writes of the model
  int value_bytes = 4;     // single precision, as seed 003
  int line_bytes = 64;     // the unit of coherence
  // The dense write loop's own instructions (read the private gradient, update the model, clear the gradient), in
  // cycles per model value. 0 leaves them out: only the ownership transfers of the write are priced. Any other
  // value is an assumption (seed 003 gives none).
  double write_cycles_per_feature = 0;
};

// Throws InputError (one line) unless rows, nnz_per_row, features, batch_rows, value_bytes, line_bytes > 0 and
// write_cycles_per_feature >= 0.
void check_pattern(const SharingPattern& pattern);

// How fast a simulated core computes, from one thread of serial SGD measured on this machine: its rate in
// non-zeros per second at its clock, scaled to the simulated clock in cycles, times a penalty for seed 003's
// single-threaded 2-wide in-order cores. The penalty is an ASSUMPTION (default 2), never fitted to seed 003's
// speed-ups.
struct CoreRate {
  double native_nnz_per_s = 0;
  double native_clock_Hz = 0;
  double in_order_penalty = 2;  // assumed
};

// Seconds per non-zero on a simulated core at `clock_Hz`: native_clock_Hz / native_nnz_per_s x in_order_penalty /
// clock_Hz. Throws InputError unless every number is > 0 (the penalty >= 1 is not required, only > 0).
double seconds_per_nnz(const CoreRate& rate, double clock_Hz);

// How much of a pass is simulated. Every core runs warmup_batches + measured_batches + cooldown_batches batches;
// the time per batch is the mean of its measured ones, and a pass is rows / cores rows of them (scaled, not
// simulated). Warm-up batches let the cores drift apart from their common start; cool-down batches keep every
// core's measured batches under the load of the others.
struct MeshSimulationOptions {
  int warmup_batches = 1;
  int measured_batches = 3;
  int cooldown_batches = 1;
  // Core c starts its first batch c / cores of a batch's compute later: HogBatch's threads take batches
  // dynamically and never synchronise, so their phases spread; false starts every core at once (the worst burst).
  bool staggered_start = true;
  TransferModel transfers = TransferModel::kTaskPerPhase;  // see TransferModel: fast, up to ~25% optimistic
  double wall_timeout_s = 300;                             // of one simulation; past it, TimeoutError
};

// Simulated seconds of one pass, per core-phase. compute: gradients (and the dense write loop's instructions, if
// SharingPattern::write_cycles_per_feature is set); read: waiting for the lines the samples read (coherence
// misses); write: waiting for ownership of the model's lines.
struct PassBreakdown {
  double compute_s = 0;
  double read_s = 0;
  double write_s = 0;
  double total_s() const { return compute_s + read_s + write_s; }
};

struct MeshPass {
  double time_per_pass_s = 0;               // the slowest core's pass: = per_pass.total_s()
  PassBreakdown per_pass;                   // of the slowest core
  double rows_per_core = 0;                 // ceil(rows / cores): the slowest core's share
  double batches_per_core = 0;              // rows_per_core / batch_rows (the last batch may be partial)
  std::uint64_t read_bytes_per_batch = 0;   // per core, over all owners: lines read x line_bytes
  std::uint64_t write_bytes_per_batch = 0;  // per core, over all owners: model lines x line_bytes
  std::uint64_t transfers_per_batch = 0;    // per core: one per other core for reads, one for writes
  int slowest_core = 0;
  double wall_s = 0;  // wall time of the simulation, fork included
};

// Simulates the pattern on the chip with cores computing at `seconds_per_nnz` (each core one SimGrid host whose
// speed is clock_Hz cycles per second). Per batch, each core of P:
//  (a) computes batch_rows x nnz_per_row non-zeros (and features x write_cycles_per_feature cycles, if set);
//  (b) reads: every line its samples touch (batch_rows x nnz_per_row of them) was last written by another core,
//      spread evenly over the P - 1 others: one transfer from each of (lines x line_bytes) / (P - 1) bytes, all at
//      once, sharing the links as options.transfers says; it waits for all;
//  (c) writes: fetches ownership of every line of the model (features x value_bytes bytes, rounded up to lines)
//      from its current owners, again one concurrent transfer from each other core, and waits for all.
// A pass = floor(b) full batches + one partial batch of the remaining fraction f of a batch, whose compute and reads
// are f of a batch's and whose write is whole (b = rows_per_core / batch_rows); the slowest core gives the pass.
// With one core there is no transfer. Per-owner sizes are rounded to whole bytes. Throws InputError for bad
// options, TimeoutError past wall_timeout_s, InternalError if the simulation fails.
MeshPass simulate_mesh_pass(const MeshOptions& mesh, const SharingPattern& pattern, double seconds_per_nnz,
                            const MeshSimulationOptions& options = {});

// One chip of the prediction and the passes to the target with that many threads (for HogBatch: its passes to
// 99.5% with P virtual threads, e.g. from algorithms/shared_memory's lockstep schedule).
struct MeshPoint {
  MeshOptions mesh;
  double passes_to_target = 0;
};

struct MeshSpeedup {
  MeshOptions mesh;
  MeshPass pass;
  double passes_to_target = 0;
  double time_to_target_s = 0;  // passes_to_target x pass.time_per_pass_s
  double hardware_speedup = 0;  // serial time per pass / this time per pass
  double speedup = 0;           // serial time to target / this time to target
};

struct MeshSpeedupStudy {
  double seconds_per_nnz = 0;
  double in_order_penalty = 0;        // the assumed factor that went into seconds_per_nnz
  double serial_time_per_pass_s = 0;  // one simulated core, compute only: rows x nnz_per_row x seconds_per_nnz
  double serial_passes_to_target = 0;
  double serial_time_to_target_s = 0;
  std::vector<MeshSpeedup> points;  // in the order given
  double wall_s = 0;                // of every simulation together
};

// Predicted speed-up of the pattern over serial SGD on one simulated core, per chip: T_serial / T(P), with T =
// passes to target x time per pass. Serial's model stays in its core's cache, so its pass is compute only, at the
// same seconds per non-zero (the chips' clock, which must be the same for every point). Returns the hardware
// speed-up (time per pass only) beside the full one. Throws InputError for no points, chips of different clocks,
// passes <= 0, bad options; and what simulate_mesh_pass throws.
MeshSpeedupStudy predict_mesh_speedup(const std::vector<MeshPoint>& points, const SharingPattern& pattern,
                                      double serial_passes_to_target, const CoreRate& rate,
                                      const MeshSimulationOptions& options = {});

}  // namespace dsgd::simulate
