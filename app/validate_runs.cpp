#include "app/validate_runs.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "measure/validation.hpp"

namespace dsgd::app {

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
  return measure::steady_seconds_per_iteration(*by_time, *by_iteration);
}

simulate::ScalingPoint predict(const platforms::Platform& platform, const algorithms::RunOptions& run) {
  simulate::ScalingOptions scaling;
  scaling.algorithm = run.algorithm;
  scaling.model = run.model;
  scaling.hyper = run.hyper;
  scaling.workers = {run.workers};
  scaling.iterations = run.budget.iterations;
  scaling.round_iterations = run.budget.eval_every;
  scaling.fidelity = simulate::Fidelity::kMessage;
  return simulate::simulate_weak_scaling(platform, scaling).front();
}

void add_predicted(reports::Entry& entry, const simulate::ScalingPoint& point, bool has_master, std::int64_t iterations,
                   double weight) {
  const std::size_t worker = has_master ? 1 : 0;
  if (worker >= point.per_rank.size()) return;
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    const double seconds = point.per_rank[worker].seconds[i];
    if (seconds > 0) {
      entry.counters["predicted_s_per_iteration:" + std::string(kCategoryNames[i])] +=
          weight * seconds / static_cast<double>(iterations);
    }
  }
}

void add_repetition(reports::Entry& entry, const reports::Entry& repetition) {
  for (const auto& [category, seconds] : repetition.breakdown_s) entry.breakdown_s[category] += seconds;
  for (const auto& [name, value] : repetition.counters) {
    if (name.starts_with("first_round_s:")) entry.counters[name] += value;
  }
}

void add_measured(reports::Entry& entry, std::int64_t iterations) {
  for (const auto& [category, seconds] : entry.breakdown_s) {
    const auto first = entry.counters.find("first_round_s:" + category);
    const double steady_s = seconds - (first == entry.counters.end() ? 0.0 : first->second);
    entry.counters["measured_s_per_iteration:" + category] = std::max(0.0, steady_s) / static_cast<double>(iterations);
  }
}

}  // namespace dsgd::app
