#pragma once
// Test-set evaluation of a network's current parameters: the accuracy and loss every training run reports.

#include <cstddef>
#include <functional>
#include <span>

#include "core/data/dataset.hpp"
#include "core/nn/network.hpp"

namespace dsgd::nn {

struct Evaluation {
  double accuracy = 0;  // fraction of `test` classified right
  double loss = 0;      // mean cross-entropy
};

// The largest divisor of n that is at most `limit`: an evaluation batch that counts every test image once.
int evaluation_batch(std::size_t n, int limit = 256);

// How many of `available` evaluators of batch evaluation_batch(n) an evaluation of n test images uses: one per
// batch at most, at least one (what rank 0 builds, and what the memory estimates count).
int evaluation_parts(std::size_t n, int available);

// Runs `evaluator` (forward only) over all of `test`, whose size its batch must divide (InputError otherwise).
Evaluation evaluate(Network& evaluator, const data::Dataset& test);

// Runs the tasks it is given and returns when all are done (Comm::run_side_by_side).
using SideBySide = std::function<void(std::span<const std::function<void()>>)>;

// evaluate() with the test set's batches split into runs of consecutive batches, one per evaluator (each with its
// own back end, all of the same batch and weights), the runs through `run`. The batches' counts and losses are
// added in batch order afterwards, so the result has the bits of evaluate(*evaluators[0], test).
Evaluation evaluate(std::span<Network* const> evaluators, const data::Dataset& test, const SideBySide& run);

}  // namespace dsgd::nn
