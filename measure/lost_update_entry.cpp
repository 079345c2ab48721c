#include "measure/lost_update_entry.hpp"

#include <algorithm>
#include <string>

namespace dsgd::measure {

reports::Entry to_entry(const LostUpdateRow& row) {
  const std::string variant(to_string(row.variant));
  // ranks are the threads (the schema keeps `threads` for Google Benchmark's own field).
  reports::Entry entry = reports::timed_entry(
      "lost_updates/" + variant + "/" + std::to_string(row.threads) + "/" + std::to_string(row.floats), "threads",
      "measured", "", row.threads, row.median_seconds());
  entry.iterations = static_cast<std::int64_t>(row.lost.size());
  entry.cpu_time = row.parallelism() * entry.real_time;  // all threads' CPU seconds in a median run
  entry.labels["variant"] = variant;
  entry.counters["floats"] = static_cast<double>(row.floats);
  entry.counters["additions_per_element"] = static_cast<double>(row.additions_per_element);
  entry.counters["additions"] = static_cast<double>(row.additions);
  entry.counters["repeats"] = static_cast<double>(row.lost.size());
  entry.counters["lost"] = static_cast<double>(row.lost_total());
  const auto [fewest, most] = std::minmax_element(row.lost.begin(), row.lost.end());
  entry.counters["lost_min"] = static_cast<double>(*fewest);  // per run
  entry.counters["lost_max"] = static_cast<double>(*most);
  entry.counters["lost_percent"] = row.lost_percent();
  entry.counters["seconds"] = row.median_seconds();
  entry.counters["additions_per_s"] = row.additions_per_second();
  entry.counters["parallelism"] = row.parallelism();
  return entry;
}

}  // namespace dsgd::measure
