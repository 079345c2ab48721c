#pragma once
// The small generated task the algorithms' tests train on, shared by the fixture that runs every executor
// (training_runs.hpp) and the one that needs nothing but the threads executor (threads_catalog_test.cpp).

#include "algorithms/runner.hpp"

namespace dsgd::algorithms::testing {

inline constexpr std::size_t kSmallRunTrainImages = 960;
inline constexpr std::size_t kSmallRunTestImages = 200;

// 3 workers, batch 16, momentum SGD, 40 iterations evaluated every 20: two rounds in which every algorithm learns.
inline RunOptions small_run_options() {
  RunOptions options;
  options.workers = 3;
  options.hyper.batch = 16;
  options.hyper.learning_rate = 0.01F;
  options.hyper.momentum = 0.5F;
  options.budget.iterations = 40;
  options.budget.eval_every = 20;
  return options;
}

}  // namespace dsgd::algorithms::testing
