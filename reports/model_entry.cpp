#include "reports/model_entry.hpp"

namespace dsgd::reports {

Entry to_entry(const ModelSpec& model) {
  Entry entry = catalog_entry(model.name, "model", model.description);
  entry.model = model.name;
  entry.labels["input"] = to_string(model.input);
  entry.labels["published_source"] = model.published.source;
  const auto parameters = static_cast<double>(model.parameters());
  entry.counters["layers"] = static_cast<double>(model.layers.size());
  entry.counters["parameters"] = parameters;
  entry.counters["bytes_fp32"] = 4 * parameters;
  entry.counters["bytes_fp16"] = 2 * parameters;
  entry.counters["forward_flops"] = model.forward_flops();
  entry.counters["activation_bytes"] = static_cast<double>(model.activation_bytes());
  entry.counters["flops_per_parameter"] = model.flops_per_parameter();
  if (model.published.parameters > 0) {
    const auto published = static_cast<double>(model.published.parameters);
    entry.counters["published_parameters"] = published;
    entry.counters["parameters_diff_percent"] = 100.0 * (parameters - published) / published;
  }
  if (model.published.forward_multiply_adds) {
    entry.counters["published_forward_multiply_adds"] = *model.published.forward_multiply_adds;
  }
  return entry;
}

}  // namespace dsgd::reports
