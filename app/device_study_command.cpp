// `dsgd simulate --study p100`: single-device training rates predicted by the kernel model by shape beside the
// published ones (simulate/device_study.hpp), one entry per row and one for the FITTED efficiency.

#include "app/commands.hpp"
#include "simulate/device_study.hpp"

namespace dsgd::app {

namespace {

reports::Results device_study_results(const Context& context, const simulate::DeviceStudyOutcome& outcome) {
  reports::Results results = new_results(context);
  const auto entry_of = [&](std::string name, const std::string& kind) {
    reports::Entry entry = simulated_study_entry(std::move(name), outcome.study, kind);
    entry.fidelity = "kernel model";
    entry.platform = outcome.platform;
    entry.labels["device"] = outcome.device;
    return entry;
  };
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
    entry.labels["determined"] = std::string(simulate::to_string(row.determined));
    results.benchmarks.push_back(std::move(entry));
  }
  auto fitted = entry_of("study/" + outcome.study + "/fitted/efficiency", "fitted");
  fitted.counters["efficiency"] = outcome.efficiency;
  fitted.labels["fitted_on"] = outcome.fitted_on;
  results.benchmarks.push_back(std::move(fitted));
  return results;
}

}  // namespace

void run_device_study(Context& context, const std::string& study, const std::string& results) {
  const auto outcome = simulate::run_device_study(algorithms::find_device_study(study));
  context.out << simulate::format_device_study(outcome);
  if (!results.empty()) reports::write_results(results, device_study_results(context, outcome));
}

}  // namespace dsgd::app
