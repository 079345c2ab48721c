#pragma once
// How much memory a training run takes beyond its loaded data, estimated before anything is allocated, so a world
// or a batch that will not fit is refused with a one-line error instead of failing (or being killed) halfway.
// The formula is docs/time-to-accuracy.md "Memory"; the threads executor, the MPI ranks of one machine and the
// numeric simulation all hold every rank's replica on this machine at once.

#include <cstddef>
#include <string>

#include "algorithms/runner.hpp"

namespace dsgd::algorithms {

// Per worker, the model-sized vectors an algorithm keeps (kModelVectors of them) and its batch's activations
// (forward and backward); per master, the model-sized vectors; on rank 0, the evaluator; per rank, a fixed
// overhead for its thread, actor or process and its back end.
struct MemoryEstimate {
  double per_worker_bytes = 0;
  double per_master_bytes = 0;
  double evaluator_bytes = 0;
  double total_bytes = 0;  // all ranks, evaluator included
  std::string formula;     // the terms, for messages and results
};
// Model-sized float vectors per rank: weights, gradients, velocity, two algorithm buffers (an accumulated gradient,
// an elastic centre), a collective's scratch buffer and a message in flight.
inline constexpr int kModelVectors = 7;
// Per rank, besides its vectors: the stack pages and the back end's scratch (measured: docs/time-to-accuracy.md
// "Memory").
inline constexpr double kRankOverheadBytes = 8e6;

// `evaluators`: test-set evaluators of rank 0 (a numeric simulation's pool splits the test set over one per thread).
MemoryEstimate estimate_run_memory(const RunOptions& run, std::size_t test_images, int evaluators = 1);

// The limit a run is held to: `limit_bytes` when positive (the user's --memory-limit), else what this machine has
// available now (core/memory.hpp).
double memory_limit(double limit_bytes);

// Throws InputError "WHAT: an estimated X (FORMULA), more than the Y this machine has available (--memory-limit):
// ADVICE" when `estimate` is
// over memory_limit(limit_bytes).
void check_memory(const MemoryEstimate& estimate, double limit_bytes, const std::string& what,
                  const std::string& advice);

}  // namespace dsgd::algorithms
