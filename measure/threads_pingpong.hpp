#pragma once
// The threads executor's message cost, measured the way dsgd-mpi measures MPI's: a ping-pong between ranks 0 and
// 1 of a threads world (measure/threads/executor.hpp), so `dsgd calibrate` can fit alpha-beta to in-process
// messages (a copy between buffers plus a wake-up of the receiving thread) and write the platform that predicts
// threads runs.

#include <cstddef>
#include <vector>

#include "measure/calibration.hpp"

namespace dsgd::measure {

struct ThreadsPingPongOptions {
  double min_bytes = 8;
  double max_bytes = 64.0 * 1024 * 1024;  // sizes are the powers of two in [min_bytes, max_bytes]
  int rounds = 15;                        // timed sweeps over all sizes (one more, untimed, warms up)
  // Threads beside the pair that compute while it ping-pongs: the link as a transfer beside computing ranks sees
  // it (platforms::SharedChip::loaded_link).
  int busy_ranks = 0;
  // Each size's mean round trip instead of its median: the mean counts the samples a preempted thread stretched.
  bool mean = false;
  // 0: one warm buffer per rank; else buffers cycled through this many bytes (measure/pingpong_buffers.hpp).
  std::size_t pool_bytes = 0;
};

// One point per size: the median (or mean) round trip over the rounds, each round the mean of enough trips to last
// about a millisecond. Throws InputError for bad options.
std::vector<PingPongPoint> threads_pingpong(const ThreadsPingPongOptions& options);

}  // namespace dsgd::measure
