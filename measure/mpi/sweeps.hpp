#pragma once
// The MPI microbenchmarks dsgd-mpi runs (app/dsgd_mpi_sweeps.cpp prints them and writes their results): the ping-pong
// between ranks 0 and 1 that `dsgd calibrate` fits, core/collectives.hpp's allreduce algorithms against
// MPI_Allreduce, and a quick end-to-end self-test of the MPI executor. Every function here is run by every rank of
// the world; the timings come back on rank 0. Only targets that link OpenMPI (dsgd::measure_mpi) may include it.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "measure/allreduce_sweep.hpp"
#include "measure/mpi/comm.hpp"

namespace dsgd::measure::mpi {

// DeepBench's allreduce sizes, in floats (baidu-research/DeepBench, all-reduce kernels).
inline const std::vector<std::size_t> kDeepBenchFloats = {100000,   3097600,  4194304, 6553600,
                                                          16777217, 38360000, 64500000};

// The slowest rank's `value`: a collective is done when the last rank is done. Every rank calls it.
double max_over_ranks(MpiComm& comm, double value);

// --- ping-pong ----------------------------------------------------------------------------------------------------

struct PingPongOptions {
  double min_bytes = 8;
  double max_bytes = 64.0 * 1024 * 1024;
  int rounds = 15;  // timed sweeps over all sizes (one more, untimed, warms up)
  // Ranks 2 and up compute while 0 and 1 ping-pong (instead of idling): the link as a transfer beside computing
  // ranks sees it, on a machine with more ranks than cores (platforms::SharedChip::loaded_link).
  bool busy = false;
  // > 0: rank 0 computes this long before each round trip, one trip a sample, and times the round trip alone: a
  // worker's exchange with a master that waited through the worker's forward/backward (with busy, beside the other
  // computing workers). Back-to-back round trips keep both ranks of the pair awake, which such a master may not be
  // (docs/validation.md, "Several runs a row").
  double think_s = 0;
  // 0: one buffer, warm in cache (the classic ping-pong); else buffers cycled through this many bytes, each message
  // starting from memory as training's exchanges do (measure/pingpong_buffers.hpp).
  double pool_bytes = 0;
};

// The message sizes of a ping-pong, ascending: the powers of two in [min_bytes, max_bytes] and, within that range,
// sizes around Open MPI's eager limit, which show where its step is.
std::vector<std::size_t> pingpong_sizes(const PingPongOptions& options);

// One size's samples: each the round trip of one message, the mean over `trips` back-to-back trips.
struct PingPongSamples {
  std::size_t bytes = 0;
  int trips = 0;
  std::vector<double> round_trip_s;  // one per timed round
};

// The ping-pong between ranks 0 and 1; the other ranks idle (a barrier each round) or, with options.busy, compute.
// Returns the samples per size of pingpong_sizes on rank 0, nothing on the other ranks. Throws InputError for fewer
// than 2 ranks, rounds < 1, sizes outside 1 <= min_bytes <= max_bytes, a negative think or pool.
std::vector<PingPongSamples> pingpong(MpiComm& comm, const PingPongOptions& options);

// --- allreduce ----------------------------------------------------------------------------------------------------

// The variant name of MPI_Allreduce beside core/collectives.hpp's algorithm names.
inline constexpr std::string_view kMpiVariant = "mpi";

struct AllreduceOptions {
  std::vector<std::size_t> sizes = kDeepBenchFloats;  // in floats
  std::size_t max_floats = 0;                         // leave out larger sizes; 0: no limit
  int rounds = 7;                                     // timed rounds (one more, untimed, checks the results)
  std::vector<std::string> variants = {"ring", "recursive_doubling", "rabenseifner", "reduce_broadcast", "mpi"};
};

// measure/allreduce_sweep.hpp's sweep on MPI ranks, with MPI_Allreduce as the variant "mpi": the sizes up to
// max_floats. Returns the samples on every rank. Throws InputError for rounds < 1, an unknown variant (listing the
// valid ones) or no size left.
AllreduceSweep allreduce_sweep(MpiComm& comm, AllreduceOptions options);

// --- self-test ----------------------------------------------------------------------------------------------------

// Every allreduce algorithm and MPI_Allreduce, checked exactly, then a ring of point-to-point messages, then a
// barrier. With fail_rank >= 0 that rank throws Error on purpose and the others wait for a message it never sends:
// what ends them is the failing rank's MPI_Abort (the abort path's test). Throws InternalError on a wrong result.
void selftest(MpiComm& comm, int fail_rank = -1);

}  // namespace dsgd::measure::mpi
