#pragma once
// Test-set evaluation of a network's current parameters: the accuracy and loss every training run reports.

#include <cstddef>

#include "core/data/dataset.hpp"
#include "core/nn/network.hpp"

namespace dsgd::nn {

struct Evaluation {
  double accuracy = 0;  // fraction of `test` classified right
  double loss = 0;      // mean cross-entropy
};

// The largest divisor of n that is at most `limit`: an evaluation batch that counts every test image once.
int evaluation_batch(std::size_t n, int limit = 256);

// Runs `evaluator` (forward only) over all of `test`, whose size its batch must divide (InputError otherwise).
Evaluation evaluate(Network& evaluator, const data::Dataset& test);

}  // namespace dsgd::nn
