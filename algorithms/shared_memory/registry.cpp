#include <cmath>

#include "algorithms/shared_memory/entries.hpp"
#include "core/error.hpp"
#include "core/splitmix.hpp"

namespace dsgd::algorithms::shared_memory {

const std::vector<MethodEntry>& method_catalog() {
  static const std::vector<MethodEntry> catalog = {serial_entry(),         mini_batch_entry(),
                                                   hogwild_entry(),        hogbatch_entry(),
                                                   hogbatch_local_entry(), multi_model_hogwild_entry()};
  return catalog;
}

std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const auto& entry : method_catalog()) names.push_back(entry.name);
  return names;
}

const MethodEntry& find_method(const std::string& name) {
  for (const auto& entry : method_catalog()) {
    if (entry.name == name) return entry;
  }
  throw UnknownNameError("shared-memory method", name, method_names());
}

ModelVector make_model(const Method& method, std::size_t features) {
  return ModelVector(features * method.layout().stride, 0.0F);
}

std::vector<float> model_weights(std::span<const float> model, const ModelLayout& layout, int m) {
  DSGD_ENFORCE(m >= 0 && m < layout.models, "model index out of range");
  DSGD_ENFORCE_EQ(model.size() % layout.stride, 0U);
  std::vector<float> weights(model.size() / layout.stride);
  for (std::size_t j = 0; j < weights.size(); ++j) weights[j] = model[j * layout.stride + static_cast<std::size_t>(m)];
  return weights;
}

std::vector<float> hidden_task_labels(const data::SparseDataset& data, int models, std::uint64_t seed) {
  if (models < 1) throw InputError("hidden task labels: models must be at least 1, got " + std::to_string(models));
  const auto k = static_cast<std::size_t>(models);
  std::vector<float> labels(data.rows() * k);
  for (std::size_t i = 0; i < data.rows(); ++i) labels[i * k] = data.label[i];
  for (std::size_t m = 1; m < k; ++m) {
    // v_m[j]: a standard normal from the (seed, m, j) hash by Box-Muller, so the tasks do not depend on call order.
    std::vector<float> hidden(data.features);
    for (std::size_t j = 0; j < data.features; ++j) {
      const std::uint64_t bits = splitmix64(splitmix64(splitmix64(seed) + m) + j);
      const double u1 = (static_cast<double>(bits >> 40) + 1.0) / 16777217.0;  // (0, 1]
      const double u2 = static_cast<double>(bits & 0xFFFFFFU) / 16777216.0;
      hidden[j] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
    for (std::size_t i = 0; i < data.rows(); ++i) {
      labels[i * k + m] = linear::dot_row(data, i, hidden) >= 0.0F ? 1.0F : -1.0F;
    }
  }
  return labels;
}

}  // namespace dsgd::algorithms::shared_memory
