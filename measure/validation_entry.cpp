#include "measure/validation_entry.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace dsgd::measure {

double steady_seconds_per_iteration(const reports::Entry& run) {
  const std::vector<std::pair<double, double>>* by_time = nullptr;
  const std::vector<std::pair<double, double>>* by_iteration = nullptr;
  for (const auto& curve : run.curves) {
    if (curve.name == "test_accuracy") by_time = &curve.points;
    if (curve.name == "test_accuracy_by_iteration") by_iteration = &curve.points;
  }
  if (by_time == nullptr || by_iteration == nullptr || by_time->size() < 2 || by_time->size() != by_iteration->size()) {
    throw InternalError("validate: run '" + run.name + "' has no curve of two rounds or more");
  }
  return steady_seconds_per_iteration(*by_time, *by_iteration);
}

void add_repetition(reports::Entry& entry, int index, reports::Entry run, const RunMeasurement& measured,
                    double predicted_s, const Breakdown* predicted_worker, const RowShape& shape) {
  if (index == 0) {
    entry = std::move(run);
  } else {
    for (const auto& [category, seconds] : run.breakdown_s) entry.breakdown_s[category] += seconds;
    for (const auto& [name, value] : run.counters) {
      if (name.starts_with("first_round_s:")) entry.counters[name] += value;
    }
  }
  const std::string each = "repetition" + std::to_string(index) + "_";
  entry.counters[each + "measured_s_per_iteration"] = measured.seconds_per_iteration;
  entry.counters[each + "predicted_s_per_iteration"] = predicted_s;
  if (measured.kernels) entry.counters[each + "kernel_drift"] = measured.drift;
  if (predicted_worker == nullptr) return;
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    const double seconds = predicted_worker->seconds[i];
    if (seconds > 0) {
      entry.counters["predicted_s_per_iteration:" + std::string(kCategoryNames[i])] +=
          (1.0 / shape.repetitions) * seconds / static_cast<double>(shape.iterations);
    }
  }
}

void finish_row(reports::Entry& entry, const RowRuns& runs, const RowShape& shape, const std::string& prediction) {
  entry.counters["runs"] = shape.repetitions;
  entry.counters["measured_s_per_iteration"] = runs.measured();
  entry.counters["predicted_s_per_iteration"] = runs.predicted();
  entry.counters["error"] = runs.error();
  entry.counters["measured_spread"] = runs.spread();
  entry.counters["warmup_iterations"] = static_cast<double>(shape.warmup_iterations);
  entry.counters["others_busy_cores"] = runs.others_cores;
  if (!shape.file_kernels) entry.counters["kernel_drift"] = runs.drift;
  entry.labels["prediction"] = prediction;
  // Each run's breakdown minus its first round, over the steady iterations of every repetition.
  const auto steady_iterations = (shape.iterations - shape.warmup_iterations) * shape.repetitions;
  for (const auto& [category, seconds] : entry.breakdown_s) {
    const auto first = entry.counters.find("first_round_s:" + category);
    const double steady_s = seconds - (first == entry.counters.end() ? 0.0 : first->second);
    entry.counters["measured_s_per_iteration:" + category] =
        std::max(0.0, steady_s) / static_cast<double>(steady_iterations);
  }
}

}  // namespace dsgd::measure
