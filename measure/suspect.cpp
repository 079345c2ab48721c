#include "measure/suspect.hpp"

#include "core/format.hpp"

namespace dsgd::measure {

std::string busy_machine_warning(double others_cores) {
  if (!(others_cores > kBusyCores)) return "";
  return "warning: other programs kept " + fixed(others_cores, 2) +
         " cores busy while this measured: times may be long and rates low; measure again on a quiet machine";
}

std::string above_bound_warning(const std::string& what, double measured, double bound, const std::string& bound_name,
                                const std::string& unit) {
  constexpr double kTolerance = 0.05;
  if (!(bound > 0) || !(measured > bound * (1 + kTolerance))) return "";
  return "warning: " + what + " measured " + significant(measured, 4) + " " + unit + ", " +
         fixed(100 * (measured / bound - 1), 0) + "% above " + bound_name + " (" + significant(bound, 4) + " " + unit +
         "), which it cannot pass: the bound was measured low (a busy machine) or the measurement is wrong";
}

void mark_suspect(std::vector<reports::Entry>& entries, const std::string& why) {
  if (why.empty()) return;
  for (auto& entry : entries) entry.labels["suspect"] = why;
}

}  // namespace dsgd::measure
