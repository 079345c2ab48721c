// `dsgd simulate --study p100`: single-device training rates predicted by the kernel model by shape beside the
// published ones (simulate/device_study.hpp), and its results entries (simulate/device_study_entries.hpp).

#include "app/commands.hpp"
#include "simulate/device_study.hpp"
#include "simulate/device_study_entries.hpp"

namespace dsgd::app {

void run_device_study(Context& context, const std::string& study, const std::string& results) {
  const auto outcome = simulate::run_device_study(algorithms::find_device_study(study));
  context.out << simulate::format_device_study(outcome);
  if (results.empty()) return;
  auto document = new_results(context);
  document.benchmarks = simulate::to_entries(outcome);
  reports::write_results(results, document);
}

}  // namespace dsgd::app
