#include "algorithms/shared_memory/kernels.hpp"

#include <cmath>

#include "core/data/sampler.hpp"
#include "core/error.hpp"
#include "core/linear/logistic.hpp"

namespace dsgd::algorithms::shared_memory::detail {

void check_options(const std::string& method, const MethodOptions& options, bool multi_model) {
  const auto fail = [&](const std::string& what) { throw InputError(method + ": " + what); };
  if (options.threads < 0) {
    fail("threads must be at least 1 (0: every hardware thread), got " + std::to_string(options.threads));
  }
  if (!(options.alpha > 0.0F) || !std::isfinite(options.alpha)) {
    fail("learning rate alpha must be positive and finite, got " + std::to_string(options.alpha));
  }
  if (options.batch < 1) fail("batch size must be at least 1, got " + std::to_string(options.batch));
  if (options.hog_batch < 0) {
    fail("HogBatch size must be at least 1 (0: batch / threads), got " + std::to_string(options.hog_batch));
  }
  if (options.models < 1) fail("models must be at least 1, got " + std::to_string(options.models));
  if (!multi_model && options.models != 1) {
    fail("trains one model; models = " + std::to_string(options.models) + " needs multi-model-hogwild");
  }
  if (!multi_model && options.task_labels) {
    fail("trains one model on the data set's labels; task labels need multi-model-hogwild");
  }
}

int resolve_threads(const MethodOptions& options) {
  return options.threads > 0 ? options.threads : std::max(1, omp_get_max_threads());
}

std::vector<float> degree_l2_weights(const data::SparseDataset& data, double lambda) {
  std::vector<std::uint64_t> rows_with(data.features, 0);
  for (const std::uint32_t j : data.index) ++rows_with[j];
  std::vector<float> weights(data.features, 0.0F);
  const double n = static_cast<double>(data.rows());
  for (std::size_t j = 0; j < data.features; ++j) {
    if (rows_with[j] > 0) weights[j] = static_cast<float>(lambda * n / static_cast<double>(rows_with[j]));
  }
  return weights;
}

void proximal_shrink(std::span<const float> weights, float step, std::span<float> shrink) {
  for (std::size_t j = 0; j < weights.size(); ++j) shrink[j] = 1.0F / (1.0F + step * weights[j]);
}

float label_slope(float margin, float label) {
  return label * static_cast<float>(linear::logistic_slope(static_cast<double>(label * margin)));
}

PassOrder::PassOrder(std::size_t rows, std::uint64_t seed, int pass, bool shuffle) : rows_(rows), shuffled_(shuffle) {
  if (shuffle) order_ = data::epoch_permutation(rows, seed, static_cast<std::uint64_t>(pass));
}

}  // namespace dsgd::algorithms::shared_memory::detail
