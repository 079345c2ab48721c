#include "reports/trace.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json.hpp"

namespace dsgd::reports {

namespace {

constexpr double kMicrosecondsPerSecond = 1e6;

constexpr std::array<std::string_view, 5> kReservedKeys = {"events_in", "events_written", "events_dropped",
                                                           "max_events", "drop_rule"};

constexpr std::string_view kDropRule =
    "per rank, the earliest events by start up to an equal share of max_events; unused share goes to the other "
    "ranks, the remainder one each in ascending rank order";

void check_event(const TraceEvent& event, std::size_t index) {
  auto fail = [&](const std::string& what) {
    throw InputError("trace event " + std::to_string(index) + " (rank " + std::to_string(event.rank) + "): " + what);
  };
  if (event.rank < 0) fail("negative rank; expected >= 0");
  if (static_cast<std::size_t>(event.category) >= kCategoryNames.size()) {
    fail("category " + std::to_string(static_cast<int>(event.category)) + " out of range; expected 0 to " +
         std::to_string(kCategoryNames.size() - 1));
  }
  // Checked after conversion too: a finite start of 1e303 s overflows to infinity in microseconds.
  if (!std::isfinite(event.start_s * kMicrosecondsPerSecond) || event.start_s < 0) {
    fail("start_s is " + std::to_string(event.start_s) + "; expected finite and >= 0");
  }
  if (!std::isfinite(event.duration_s * kMicrosecondsPerSecond) || event.duration_s < 0) {
    fail("duration_s is " + std::to_string(event.duration_s) + "; expected finite and >= 0");
  }
}

// How many events each rank keeps (indices into `counts`), given each rank's count and the budget. Water-filling:
// the largest equal quota that fits, ranks under it keep everything, the leftover goes one each in rank order.
std::vector<std::size_t> fair_shares(const std::vector<std::size_t>& counts, std::size_t budget) {
  std::vector<std::size_t> by_count(counts.size());
  for (std::size_t i = 0; i < by_count.size(); ++i) by_count[i] = i;
  std::stable_sort(by_count.begin(), by_count.end(),
                   [&](std::size_t a, std::size_t b) { return counts[a] < counts[b]; });

  std::vector<std::size_t> shares = counts;
  std::size_t remaining = budget;
  std::size_t ranks_left = counts.size();
  for (const std::size_t rank : by_count) {
    if (counts[rank] <= remaining / ranks_left) {
      remaining -= counts[rank];
      --ranks_left;
      continue;
    }
    // This rank and every later one (counts at least as large) are over the quota.
    const std::size_t quota = remaining / ranks_left;
    std::size_t extra = remaining % ranks_left;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] <= quota) continue;
      shares[i] = quota;
      if (extra > 0) {
        ++shares[i];
        --extra;
      }
    }
    break;
  }
  return shares;
}

// Shortest fixed-point text that reads back as the same double ("100000", not "1e+05", for people reading the
// file); + 0.0 turns -0 into 0. The buffer holds any finite double in fixed notation (at most 309 integer digits).
void append_number(std::string& out, double value) {
  std::array<char, 512> buffer{};
  const auto result =
      std::to_chars(buffer.data(), buffer.data() + buffer.size(), value + 0.0, std::chars_format::fixed);
  DSGD_ENFORCE(result.ec == std::errc(), "number does not fit the buffer");
  out.append(buffer.data(), result.ptr);
}

}  // namespace

TraceSummary write_chrome_trace(const std::filesystem::path& path, std::span<const TraceEvent> events,
                                const TraceLimits& limits, const std::map<std::string, std::string>& metadata) {
  if (limits.max_events == 0) throw InputError(path.string() + ": trace max_events is 0; expected >= 1");
  for (const auto& [key, value] : metadata) {
    if (std::find(kReservedKeys.begin(), kReservedKeys.end(), key) != kReservedKeys.end()) {
      throw InputError(path.string() + ": trace metadata key \"" + key + "\" is reserved for dsgd; reserved: " +
                       join(std::vector<std::string>(kReservedKeys.begin(), kReservedKeys.end())));
    }
  }
  for (std::size_t i = 0; i < events.size(); ++i) check_event(events[i], i);

  // Phase 1: each rank's events, in input order, and the ranks in ascending order.
  std::map<int, std::vector<std::size_t>> by_rank;
  for (std::size_t i = 0; i < events.size(); ++i) by_rank[events[i].rank].push_back(i);

  // Phase 2: choose the kept events (all of them when the budget allows).
  std::vector<bool> kept(events.size(), true);
  if (events.size() > limits.max_events) {
    std::vector<std::size_t> counts;
    for (const auto& [rank, indices] : by_rank) counts.push_back(indices.size());
    const std::vector<std::size_t> shares = fair_shares(counts, limits.max_events);
    std::size_t slot = 0;
    for (auto& [rank, indices] : by_rank) {
      std::vector<std::size_t> by_start = indices;
      std::stable_sort(by_start.begin(), by_start.end(),
                       [&](std::size_t a, std::size_t b) { return events[a].start_s < events[b].start_s; });
      for (std::size_t k = shares[slot]; k < by_start.size(); ++k) kept[by_start[k]] = false;
      ++slot;
    }
  }

  // Phase 3: the text, one event per line. Events are written by hand rather than through a Json tree: a tree of
  // 200,000 objects costs hundreds of MB, the text a few tens.
  std::array<std::string, kCategoryNames.size()> quoted_names;
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) quoted_names[i] = Json(std::string(kCategoryNames[i])).dump();

  TraceSummary summary;
  summary.events_in = events.size();
  std::string text = "{\"traceEvents\":[";
  text.reserve(64 * (std::min(events.size(), limits.max_events) + by_rank.size()) + 1024);
  const char* separator = "\n";
  for (const auto& [rank, indices] : by_rank) {
    const std::string tid = std::to_string(rank);
    text += separator;
    text += "{\"ph\":\"M\",\"pid\":0,\"tid\":" + tid + ",\"name\":\"thread_name\",\"args\":{\"name\":\"rank " + tid +
            "\"}}";
    separator = ",\n";
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!kept[i]) continue;
    const TraceEvent& event = events[i];
    text += separator;
    text += "{\"ph\":\"X\",\"pid\":0,\"tid\":";
    text += std::to_string(event.rank);
    text += ",\"name\":";
    text += quoted_names[static_cast<std::size_t>(event.category)];
    text += ",\"ts\":";
    append_number(text, event.start_s * kMicrosecondsPerSecond);
    text += ",\"dur\":";
    append_number(text, event.duration_s * kMicrosecondsPerSecond);
    text += '}';
    separator = ",\n";
    ++summary.events_written;
  }
  summary.events_dropped = summary.events_in - summary.events_written;
  DSGD_ENFORCE_LE(summary.events_written, limits.max_events);

  Json other_data = Json::object();
  for (const auto& [key, value] : metadata) other_data[key] = value;
  other_data["events_in"] = summary.events_in;
  other_data["events_written"] = summary.events_written;
  other_data["events_dropped"] = summary.events_dropped;
  other_data["max_events"] = limits.max_events;
  other_data["drop_rule"] = std::string(kDropRule);
  text += "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":";
  text += other_data.dump(-1, ' ', false, Json::error_handler_t::replace);
  text += "}\n";

  write_file_atomically(path, text);
  summary.bytes = text.size();
  return summary;
}

}  // namespace dsgd::reports
