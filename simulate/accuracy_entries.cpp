#include "simulate/accuracy_entries.hpp"

namespace dsgd::simulate {

namespace {

reports::Entry point_entry(const AccuracyStudy& study, const AccuracyStudyOptions& options, const std::string& dataset,
                           const AccuracyPoint& point) {
  const auto& run = options.run;
  auto entry = reports::timed_entry("accuracy/" + std::to_string(point.groups) + "groups", "simgrid", "message",
                                    run.algorithm, point.groups, point.reached ? point.seconds_to_target : 0);
  entry.platform = study.platform;
  entry.model = run.model;
  entry.dataset = dataset;
  entry.seed = run.hyper.seed;
  entry.labels["kind"] = "point";
  entry.labels["groups"] = std::to_string(point.groups) + (point.groups == 1 ? " group" : " groups");
  entry.labels["reached"] = point.reached ? "yes" : "no";
  entry.labels["numeric_by"] = "predicted (numeric simulation)";
  entry.labels["model_by"] = point.in_fit ? "FITTED (in the fit)" : "predicted (model extrapolated)";
  entry.counters["groups"] = point.groups;
  entry.counters["cores_per_group"] = point.cores_per_group;
  entry.counters["global_batch"] = static_cast<double>(point.groups) * run.hyper.batch;
  entry.counters["final_accuracy"] = point.final_accuracy;
  entry.counters["seconds_per_iteration"] = point.seconds_per_iteration;
  entry.counters["wall_s"] = point.wall_s;
  if (point.reached) {
    entry.counters["iterations_to_target"] = point.iterations_to_target;
    entry.counters["seconds_to_target"] = point.seconds_to_target;
    const auto& first = study.points.front();
    if (first.reached && first.groups == 1)
      entry.counters["speedup"] = first.seconds_to_target / point.seconds_to_target;
  }
  if (point.published_seconds) {
    entry.counters["published_seconds"] = *point.published_seconds;
    for (const auto& other : study.points) {
      if (other.groups == 1 && other.published_seconds) {
        entry.counters["published_speedup"] = *other.published_seconds / *point.published_seconds;
      }
    }
  }
  if (point.predicted) {
    entry.counters["model_iterations"] = point.predicted->updates;
    entry.counters["model_seconds"] = point.predicted_seconds;
    entry.counters["size_only_seconds_per_iteration"] = point.size_only_seconds_per_iteration;
    if (point.reached) {
      entry.counters["model_error_percent"] = 100 * (point.predicted->updates / point.iterations_to_target - 1);
      entry.counters["model_seconds_error_percent"] = 100 * (point.predicted_seconds / point.seconds_to_target - 1);
    }
  }
  reports::Curve accuracy{"test_accuracy", "time_s", "accuracy", {}};
  for (const auto& p : point.curve) accuracy.points.emplace_back(p.seconds, p.test_accuracy);
  entry.curves.push_back(std::move(accuracy));
  return entry;
}

reports::Entry fitted_entry(const AccuracyStudy& study, const std::string& name, double value,
                            const std::string& fitted_on) {
  reports::Entry entry;
  entry.name = "accuracy/fitted/" + name;
  entry.executor = "simgrid";
  entry.platform = study.platform;
  entry.labels["kind"] = "fitted";
  entry.labels["parameter"] = "FITTED " + name;
  entry.labels["fitted_on"] = fitted_on;
  entry.counters["value"] = value;
  return entry;
}

}  // namespace

std::vector<reports::Entry> to_entries(const AccuracyStudy& study, const AccuracyStudyOptions& options,
                                       const std::string& dataset) {
  std::vector<reports::Entry> entries;
  for (const auto& point : study.points) entries.push_back(point_entry(study, options, dataset, point));
  if (study.model) {
    const std::string on = "groups up to " + std::to_string(options.fit_up_to);
    entries.push_back(fitted_entry(study, "S_min", study.model->s_min_updates, on));
    entries.push_back(fitted_entry(study, "B_noise", study.model->b_noise_examples, on));
  }
  return entries;
}

}  // namespace dsgd::simulate
