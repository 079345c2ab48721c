#pragma once
// The small generated task the algorithms' tests train on, shared by the fixture that runs every executor
// (training_runs.hpp) and the one that needs nothing but the threads executor (threads_catalog_test.cpp).

#include <filesystem>
#include <memory>
#include <utility>

#include "algorithms/runner.hpp"
#include "core/data/catalog.hpp"
#include "tests/support/synthetic_images.hpp"

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

// The small task's data: generated IDX files written into `dir`, loaded and normalised.
inline RunData small_run_data(const std::filesystem::path& dir) {
  dsgd::testing::write_synthetic_idx_folder(dir, kSmallRunTrainImages, kSmallRunTestImages);
  auto loaded = data::load_normalized("idx:" + dir.string());
  RunData data;
  data.train = std::make_shared<const data::Dataset>(std::move(loaded.train));
  data.test = std::make_shared<const data::Dataset>(std::move(loaded.test));
  return data;
}

}  // namespace dsgd::algorithms::testing
