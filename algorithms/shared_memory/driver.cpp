#include "algorithms/shared_memory/driver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "algorithms/shared_memory/kernels.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

void check_run(const std::string& method, double optimal, const RunOptions& run) {
  const auto fail = [&](const std::string& what) { throw InputError(method + ": " + what); };
  if (!(optimal > 0) || !std::isfinite(optimal)) {
    fail("the optimal objective must be positive and finite, got " + std::to_string(optimal));
  }
  if (run.max_passes < 1) fail("max passes must be at least 1, got " + std::to_string(run.max_passes));
  if (!(run.max_seconds > 0)) fail("max seconds must be positive, got " + std::to_string(run.max_seconds));
  if (!std::isfinite(run.target_percent)) fail("the target closeness must be finite");
}

// F of the model after a pass: the one model directly, or the mean over models, each with its task's labels.
class Evaluator {
 public:
  Evaluator(const linear::Problem& problem, const MethodOptions& options, const ModelLayout& layout)
      : problem_(problem), layout_(layout), task_labels_(options.task_labels) {
    if (task_labels_) relabelled_ = *problem.data;  // one copy, its labels swapped per model
  }

  double operator()(std::span<const float> model) {
    if (layout_.models == 1 && layout_.stride == 1 && !task_labels_) return linear::objective(problem_, model);
    double sum = 0;
    const auto models = static_cast<std::size_t>(layout_.models);
    for (int m = 0; m < layout_.models; ++m) {
      const std::vector<float> weights = model_weights(model, layout_, m);
      if (!task_labels_) {
        sum += linear::objective(problem_, weights);
        continue;
      }
      for (std::size_t i = 0; i < relabelled_.rows(); ++i) {
        relabelled_.label[i] = (*task_labels_)[i * models + static_cast<std::size_t>(m)];
      }
      sum += linear::objective(linear::Problem{&relabelled_, problem_.lambda}, weights);
    }
    return sum / static_cast<double>(layout_.models);
  }

 private:
  const linear::Problem& problem_;
  ModelLayout layout_;
  std::shared_ptr<const std::vector<float>> task_labels_;
  data::SparseDataset relabelled_;
};

// Orders runs: reaching the target first, then less time, then fewer passes; else the higher final closeness.
bool better(const ConvergenceResult& a, const ConvergenceResult& b) {
  const bool a_reached = a.passes_to_target > 0;
  const bool b_reached = b.passes_to_target > 0;
  if (a_reached != b_reached) return a_reached;
  if (a_reached) {
    if (a.time_to_target_s != b.time_to_target_s) return a.time_to_target_s < b.time_to_target_s;
    return a.passes_to_target < b.passes_to_target;
  }
  const auto final_closeness = [](const ConvergenceResult& r) {
    return r.diverged || r.curve.empty() ? -std::numeric_limits<double>::infinity() : r.curve.back().closeness_percent;
  };
  return final_closeness(a) > final_closeness(b);
}

}  // namespace

ConvergenceResult run_to_closeness(const MethodEntry& entry, const linear::Problem& problem, double optimal,
                                   const MethodOptions& options, const RunOptions& run) {
  DSGD_ENFORCE(problem.data != nullptr, "the problem has no data");
  check_run(entry.name, optimal, run);
  std::unique_ptr<Method> method = entry.make(options);
  method->prepare(problem);
  const data::SparseDataset& data = *problem.data;
  const ModelLayout layout = method->layout();
  ModelVector model = make_model(*method, data.features);
  Evaluator evaluate(problem, options, layout);

  ConvergenceResult result;
  result.threads = method->threads();
  std::optional<StalenessRecorder> recorder;
  if (run.record_staleness) recorder.emplace(method->threads());
  double seconds = 0;
  int passes = 0;
  for (int pass = 1; pass <= run.max_passes; ++pass) {
    const float step = options.alpha / std::sqrt(static_cast<float>(pass));
    const auto start = std::chrono::steady_clock::now();
    method->pass(model, step, pass, recorder ? &*recorder : nullptr);
    const double pass_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds += pass_seconds;
    passes = pass;
    const double objective = evaluate(model);
    const double closeness = linear::closeness_percent(objective, optimal);
    result.curve.push_back({pass, seconds, pass_seconds, objective, closeness});
    if (!std::isfinite(objective)) {
      result.diverged = true;
      break;
    }
    if (closeness >= run.target_percent) {
      result.time_to_target_s = seconds;
      result.passes_to_target = pass;
      break;
    }
    if (seconds >= run.max_seconds) break;
  }
  if (seconds > 0) {
    result.nnz_per_s_per_thread = static_cast<double>(data.nnz()) * passes / seconds / result.threads;
  }
  if (recorder) result.staleness = recorder->merged();
  for (int m = 0; m < layout.models; ++m) result.weights.push_back(model_weights(model, layout, m));
  return result;
}

SweepResult sweep(const MethodEntry& entry, const linear::Problem& problem, double optimal, const MethodOptions& base,
                  const SweepGrid& grid, const RunOptions& run) {
  if (grid.alphas.empty()) throw InputError(entry.name + ": the sweep needs at least one learning rate");
  std::vector<int> sizes;  // the batch sizes of the kind this method uses; one placeholder when it uses none
  switch (entry.batch_option) {
    case BatchOption::kNone:
      sizes = {0};
      break;
    case BatchOption::kBatch:
      sizes = grid.batches;
      break;
    case BatchOption::kHogBatch:
      if (!grid.hog_batches.empty()) {
        sizes = grid.hog_batches;
        break;
      }
      {
        const int threads = detail::resolve_threads(base);
        std::set<int> derived;
        for (const int s : grid.batches) {
          for (const int hs : {s / threads, s / 4, s / 2, s}) {
            if (hs >= 1) derived.insert(hs);
          }
        }
        sizes.assign(derived.begin(), derived.end());
      }
      break;
  }
  if (sizes.empty()) throw InputError(entry.name + ": the sweep needs at least one batch size");

  SweepResult sweep_result;
  for (const float alpha : grid.alphas) {
    for (const int size : sizes) {
      MethodOptions options = base;
      options.alpha = alpha;
      if (entry.batch_option == BatchOption::kBatch) options.batch = size;
      if (entry.batch_option == BatchOption::kHogBatch) options.hog_batch = size;
      RunOptions limits = run;
      if (sweep_result.reached) {
        limits.max_seconds = std::min(run.max_seconds, sweep_result.best.result.time_to_target_s);
      }
      ConvergenceResult result = run_to_closeness(entry, problem, optimal, options, limits);
      const bool first = sweep_result.all.empty();
      if (first || better(result, sweep_result.best.result)) {
        sweep_result.best = {options, result};
        sweep_result.reached = result.passes_to_target > 0;
      }
      result.weights.clear();
      sweep_result.all.push_back({options, std::move(result)});
    }
  }
  return sweep_result;
}

}  // namespace dsgd::algorithms::shared_memory
