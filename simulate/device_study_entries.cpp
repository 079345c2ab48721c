#include "simulate/device_study_entries.hpp"

#include <string>

#include "simulate/study_entries.hpp"

namespace dsgd::simulate {

std::vector<reports::Entry> to_entries(const DeviceStudyOutcome& outcome) {
  const auto entry_of = [&](std::string name, const std::string& kind) {
    reports::Entry entry = study_entry(std::move(name), outcome.study, kind);
    entry.fidelity = "kernel model";
    entry.platform = outcome.platform;
    entry.labels["device"] = outcome.device;
    return entry;
  };
  std::vector<reports::Entry> entries;
  for (const auto& row : outcome.rows) {
    auto entry = entry_of("study/" + outcome.study + "/" + row.model + "/batch" + std::to_string(row.batch), "point");
    entry.model = row.model;
    entry.counters["batch"] = row.batch;
    entry.counters["images_per_second"] = row.images_per_second;
    entry.counters["published_images_per_second"] = row.published;
    entry.counters["difference_percent"] = row.difference_percent;
    entry.counters["seconds_per_iteration"] = row.iteration.seconds;
    entry.counters["kernels"] = row.iteration.kernels;
    entry.counters["winograd_kernels"] = row.iteration.winograd_kernels;
    entry.labels["determined"] = std::string(to_string(row.determined));
    entries.push_back(std::move(entry));
  }
  auto fitted = entry_of("study/" + outcome.study + "/fitted/efficiency", "fitted");
  fitted.counters["efficiency"] = outcome.efficiency;
  fitted.labels["fitted_on"] = outcome.fitted_on;
  entries.push_back(std::move(fitted));
  return entries;
}

}  // namespace dsgd::simulate
