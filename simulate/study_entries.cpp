#include "simulate/study_entries.hpp"

#include <algorithm>

#include "core/breakdown.hpp"
#include "core/error.hpp"

namespace dsgd::simulate {

namespace {

// `entry` as a study's entry of `kind`: executor simgrid, the labels the manifest selects on.
reports::Entry labelled(reports::Entry entry, const std::string& study, const std::string& kind) {
  entry.executor = "simgrid";
  entry.labels["study"] = study;
  entry.labels["kind"] = kind;
  return entry;
}

}  // namespace

// A results entry of one simulated run: `seconds_per_iteration` as its time.
reports::Entry simulated_entry(std::string name, const std::string& platform, const std::string& algorithm,
                               const std::string& model, const std::string& fidelity, int ranks,
                               double seconds_per_iteration) {
  reports::Entry entry =
      reports::timed_entry(std::move(name), "simgrid", fidelity, algorithm, ranks, seconds_per_iteration);
  entry.platform = platform;
  entry.model = model;
  return entry;
}

void add_simulation(reports::Entry& entry, const SimulationResult& run, const std::string& platform) {
  entry.fidelity = std::string(to_string(run.fidelity));
  entry.platform = platform;
  entry.counters["wall_s"] = run.wall_s;
}

reports::Entry to_entry(const ScalingPoint& point, const ScalingOptions& options, const std::string& platform) {
  auto entry =
      simulated_entry("simulate/" + options.algorithm + "/" + options.model + "/" + std::to_string(point.workers),
                      platform, options.algorithm, options.model, std::string(to_string(point.fidelity)), point.ranks,
                      point.seconds_per_iteration);
  entry.labels["compute_pricing"] = point.compute_pricing;
  entry.counters = {{"workers", point.workers},
                    {"nodes", point.nodes},
                    {"seconds_per_iteration", point.seconds_per_iteration},
                    {"efficiency", point.efficiency},
                    {"wall_s", point.wall_s},
                    {"exposed_comm_s", point.exposed_comm_s_per_iteration},
                    {"overlapped_comm_s", point.overlapped_comm_s_per_iteration},
                    {"bytes_sent_per_iteration", point.bytes_sent_per_iteration}};
  if (point.master_bytes_sent_per_iteration >= 0) {
    entry.counters["master_bytes_sent_per_iteration"] = point.master_bytes_sent_per_iteration;
  }
  const auto compression = options.hyper.compression;
  if (compression != Compression::kNone) {
    entry.labels["compression"] = std::string(to_string(compression));
    if (compression == Compression::kTopK) entry.counters["topk_ratio"] = options.hyper.topk_ratio;
  }
  const Breakdown mean = mean_breakdown(point.per_rank);
  for (std::size_t i = 0; i < mean.seconds.size(); ++i) {
    entry.breakdown_s[std::string(kCategoryNames[i])] = mean.seconds[i];
  }
  return entry;
}

reports::Entry study_entry(std::string name, const std::string& study, const std::string& kind) {
  reports::Entry entry;
  entry.name = std::move(name);
  return labelled(std::move(entry), study, kind);
}

// The results of a scaling study: one entry per (case, point) with the prediction, the published value and their
// difference, and one per fitted value, so the manifest can render both.
std::vector<reports::Entry> to_entries(const StudyOutcome& outcome) {
  const auto& study = outcome.study;
  const std::string_view unit = difference_unit(study.measure);
  const std::string diff_counter = unit == "pp" ? "diff_pp" : unit == "percent" ? "diff_percent" : "diff";
  std::vector<reports::Entry> results;
  for (const auto& row : outcome.rows) {
    auto entry =
        labelled(simulated_entry("study/" + study.name + "/" + row.case_label + "/" + row.size, outcome.platform,
                                 row.algorithm, row.model, row.fidelity, row.ranks, row.seconds_per_iteration),
                 study.name, "point");
    entry.iterations = outcome.iterations;
    entry.labels["case"] = row.case_label;
    entry.labels["size"] = row.size;
    entry.labels["role"] = std::string(to_string(row.value_by));
    entry.labels["time_role"] = std::string(to_string(row.time_by));
    entry.counters["workers"] = row.workers;
    entry.counters["nodes"] = row.nodes;
    entry.counters["seconds_per_iteration"] = row.seconds_per_iteration;
    entry.counters["predicted"] = row.predicted;
    if (row.published) entry.counters["published"] = *row.published;
    if (const auto diff = difference(study, row)) entry.counters[diff_counter] = *diff;
    if (row.predicted_seconds) entry.counters["predicted_seconds"] = *row.predicted_seconds;
    if (row.published_seconds) entry.counters["published_seconds"] = *row.published_seconds;
    if (row.predicted_seconds && row.published_seconds) {
      entry.counters["seconds_diff_percent"] = 100 * (*row.predicted_seconds / *row.published_seconds - 1);
    }
    if (study.measure == algorithms::StudyMeasure::kCommRatio) {
      for (std::size_t i = 0; i < row.shares.seconds.size(); ++i) {
        entry.counters["share:" + std::string(kCategoryNames[i])] = row.shares.seconds[i];
      }
    }
    for (const auto& fitted : outcome.fitted) {
      const auto& cases = fitted.applies_to;
      if (std::find(cases.begin(), cases.end(), row.case_label) != cases.end()) {
        entry.counters["fitted_" + fitted.key] = fitted.value;
      }
    }
    entry.counters["sweep_wall_s"] = outcome.sweep_wall_s;
    results.push_back(std::move(entry));
  }
  for (const auto& fitted : outcome.fitted) {
    auto entry = study_entry("study/" + study.name + "/fitted/" + fitted.name, study.name, "fitted");
    entry.platform = outcome.platform;
    entry.labels["parameter"] = "FITTED " + fitted.name;
    entry.labels["fitted_on"] = fitted.fitted_on;
    entry.labels["applies_to"] = join(fitted.applies_to);
    entry.counters["value"] = fitted.value;
    entry.counters["fit_wall_s"] = outcome.fit_wall_s;
    entry.counters["sweep_wall_s"] = outcome.sweep_wall_s;
    results.push_back(std::move(entry));
  }
  return results;
}

// The scheme study (simulate/scheme_study.hpp): one entry per (platform, model, scheme, GPUs), one per calibration.
std::vector<reports::Entry> to_entries(const SchemeOutcome& outcome) {
  std::vector<reports::Entry> results;
  for (const auto& row : outcome.rows) {
    const std::string name = "study/" + outcome.study + "/" + row.platform + "/" + row.model + "/" + row.scheme + "/" +
                             std::to_string(row.workers);
    auto entry = labelled(simulated_entry(name, row.platform, row.algorithm, row.model, row.fidelity, row.ranks,
                                          row.seconds_per_iteration),
                          outcome.study, "point");
    entry.iterations = outcome.iterations;
    entry.labels["scheme"] = row.scheme;
    entry.labels["cluster"] = row.platform + ", " + row.model;
    entry.labels["role"] = std::string(to_string(row.efficiency_by));
    entry.counters["workers"] = row.workers;
    entry.counters["nodes"] = row.nodes;
    entry.counters["seconds_per_iteration"] = row.seconds_per_iteration;
    entry.counters["efficiency"] = row.efficiency;
    entry.counters["speedup"] = row.efficiency * row.workers;
    entry.counters["compute_s"] = row.compute_s;
    entry.counters["communication_s"] = row.communication_s;
    entry.counters["overlapped_s"] = row.overlapped_s;
    entry.counters["sim_wall_s"] = row.wall_s;
    entry.counters["bound_s"] = row.bound.seconds();
    entry.counters["bound_compute_s"] = row.bound.compute_s;
    entry.counters["bound_link_s"] = row.bound.link_s;
    entry.counters["over_bound"] = row.seconds_per_iteration / row.bound.seconds();
    entry.labels["busiest_link"] = row.bound.busiest;
    entry.labels["bound"] = row.beyond_bound.empty() ? "within twice" : "more than twice";
    if (!row.beyond_bound.empty()) entry.labels["beyond_bound"] = row.beyond_bound;
    results.push_back(std::move(entry));
  }
  for (const auto& published : outcome.published) {
    auto entry = study_entry("study/" + outcome.study + "/published/" + published.scheme, outcome.study, "published");
    entry.labels["scheme"] = published.scheme;
    entry.labels["source"] = published.source;
    entry.labels["role"] = "published";
    entry.counters["workers"] = published.workers;
    entry.counters["speedup"] = published.speedup;
    entry.counters["efficiency"] = published.speedup / published.workers;
    results.push_back(std::move(entry));
  }
  for (const auto& calibration : outcome.calibrations) {
    auto entry =
        study_entry("study/" + outcome.study + "/calibration/" + calibration.model, outcome.study, "calibration");
    entry.model = calibration.model;
    entry.labels["device"] = calibration.device;
    entry.labels["source"] = calibration.source;
    entry.counters["images_per_second"] = calibration.images_per_second;
    entry.counters["conv_efficiency"] = calibration.conv_efficiency;
    if (calibration.kernel_model_efficiency > 0) {
      entry.counters["kernel_model_efficiency"] = calibration.kernel_model_efficiency;
    }
    results.push_back(std::move(entry));
  }
  return results;
}

}  // namespace dsgd::simulate
