#include "reports/allreduce_entry.hpp"

namespace dsgd::reports {

double algorithm_bandwidth_Bps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds : 0; }

double allreduce_bus_factor(int ranks) { return ranks > 0 ? 2.0 * (ranks - 1) / ranks : 0; }

Entry allreduce_entry(const std::string& executor, const std::string& fidelity, const std::string& variant, int ranks,
                      std::size_t floats, const AllreduceTimes& times) {
  Entry entry = timed_entry("allreduce/" + variant + "/" + std::to_string(floats), executor, fidelity, variant, ranks,
                            times.median_s);
  entry.iterations = times.samples;
  const double bytes = static_cast<double>(floats) * sizeof(float);
  const double algbw = algorithm_bandwidth_Bps(bytes, times.median_s);
  entry.counters = {{"floats", static_cast<double>(floats)},
                    {"bytes", bytes},
                    {"seconds", times.median_s},
                    {"seconds_min", times.min_s},
                    {"seconds_median", times.median_s},
                    {"seconds_max", times.max_s},
                    {"algbw_Bps", algbw},
                    {"busbw_Bps", algbw * allreduce_bus_factor(ranks)}};
  return entry;
}

}  // namespace dsgd::reports
