#include "simulate/accuracy_study.hpp"

#include <algorithm>

#include "core/format.hpp"
#include "simulate/numeric.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "simulate/weak_scaling.hpp"

namespace dsgd::simulate {

namespace {

void check(const platforms::Platform& platform, const AccuracyStudyOptions& options) {
  const auto& budget = options.run.budget;
  if (options.groups.empty()) throw InputError("accuracy study: no group counts given");
  if (!(budget.target_accuracy > 0)) throw InputError("accuracy study: a target accuracy is required");
  if (budget.iterations <= 0) throw InputError("accuracy study: an iteration cap (--iterations) is required");
  const int cores = platform.nodes.cpu.cores();
  for (const int groups : options.groups) {
    if (groups < 1 || groups > cores) {
      throw InputError("accuracy study: " + std::to_string(groups) + " groups on a chip of " + std::to_string(cores) +
                       " cores; give 1 to " + std::to_string(cores));
    }
  }
  if (options.fit_up_to < 1) throw InputError("accuracy study: --fit-up-to must be at least 1");
}

}  // namespace

AccuracyStudy run_accuracy_study(const platforms::Platform& platform, const AccuracyStudyOptions& options,
                                 const algorithms::RunData& data) {
  check(platform, options);
  AccuracyStudy study;
  study.platform = platform.name;
  const int cores = platform.nodes.cpu.cores();
  for (const int groups : options.groups) {
    NumericOptions numeric;
    numeric.run = options.run;
    numeric.run.workers = groups;
    numeric.placement.ranks_per_node = groups;
    if (options.progress) options.progress(std::to_string(groups) + " groups of " + options.run.algorithm);
    const auto run = simulate_numeric(platform, numeric, data);
    AccuracyPoint point;
    point.groups = groups;
    point.cores_per_group = static_cast<double>(cores) / groups;
    point.reached = run.result.time_to_target_s >= 0;
    point.seconds_to_target = run.result.time_to_target_s;
    point.seconds_per_iteration =
        run.result.train_seconds / static_cast<double>(std::max<std::int64_t>(1, run.result.iterations));
    if (point.reached) point.iterations_to_target = static_cast<double>(run.result.iterations);
    point.final_accuracy = run.result.curve.empty() ? 0 : run.result.curve.back().test_accuracy;
    point.wall_s = run.wall_s;
    point.curve = run.result.curve;
    point.in_fit = groups <= options.fit_up_to;
    for (const auto& [published_groups, seconds] : options.published_seconds) {
      if (published_groups == groups) point.published_seconds = seconds;
    }
    if (options.progress) {
      options.progress(format("%d groups: %s after %lld iterations, %.3g simulated s, %.0f s of wall time", groups,
                              point.reached ? "target reached" : "target NOT reached",
                              static_cast<long long>(run.result.iterations), run.result.train_seconds, run.wall_s));
    }
    study.points.push_back(std::move(point));
  }

  // The model of updates to the target against the global batch (groups x batch), on the fitted groups that reached it.
  std::vector<EfficiencyPoint> fitted;
  for (const auto& point : study.points) {
    if (!point.in_fit || !point.reached) continue;
    fitted.push_back({static_cast<double>(point.groups) * options.run.hyper.batch, 0.0, point.iterations_to_target,
                      point.groups, std::to_string(point.groups) + " groups"});
  }
  std::vector<double> batches;
  for (const auto& point : fitted) batches.push_back(point.global_batch);
  std::sort(batches.begin(), batches.end());
  if (std::unique(batches.begin(), batches.end()) - batches.begin() < 2) return study;
  study.model = fit_efficiency_model(fitted);

  // Composed with the time per iteration of a size-only simulation of the same placement: the prediction at sizes
  // a laptop cannot compute numerically.
  for (auto& point : study.points) {
    const double batch = static_cast<double>(point.groups) * options.run.hyper.batch;
    point.predicted = predict_updates(*study.model, batch);
    ScalingOptions scaling;
    scaling.algorithm = options.run.algorithm;
    scaling.model = options.run.model;
    scaling.hyper = options.run.hyper;
    scaling.workers = {point.groups};
    scaling.ranks_per_node = point.groups;
    scaling.iterations = 3;
    point.size_only_seconds_per_iteration = simulate_weak_scaling(platform, scaling).front().seconds_per_iteration;
    point.predicted_seconds = point.predicted->updates * point.size_only_seconds_per_iteration;
  }
  return study;
}

}  // namespace dsgd::simulate
