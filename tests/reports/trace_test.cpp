#include "reports/trace.hpp"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "reports/rank_breakdown.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::reports {
namespace {

using dsgd::testing::error_of;
using dsgd::testing::input_error;

class ReportsTrace : public dsgd::testing::ScratchDirTest {
 protected:
  Json read_trace() const { return parse_json(read_text_file(trace_path()), trace_path().string()); }
  std::filesystem::path trace_path() const { return dir_ / "trace.json"; }

  // Files in the scratch folder, to show that a rejected call leaves nothing (not even a temporary file).
  std::size_t files_in_dir() const {
    return static_cast<std::size_t>(
        std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()));
  }
};

std::vector<const Json*> events_with_phase(const Json& trace, const std::string& phase) {
  std::vector<const Json*> out;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("ph") == phase) out.push_back(&event);
  }
  return out;
}

// Kept "X" events per tid.
std::map<int, std::vector<const Json*>> complete_events_by_rank(const Json& trace) {
  std::map<int, std::vector<const Json*>> out;
  for (const Json* event : events_with_phase(trace, "X")) out[event->at("tid").get<int>()].push_back(event);
  return out;
}

TEST_F(ReportsTrace, WritesCompleteEventsInMicrosecondsAndOneThreadNamePerRank) {
  const std::vector<TraceEvent> events = {
      {0, Category::kForwardBackward, 0.0, 0.25},
      {1, Category::kGpuGpuPara, 0.5, 0.125},
      {0, Category::kWait, 0.25, 1.5},
      {3, Category::kCpuUpdate, 2.0, 0.0},
  };
  const TraceSummary summary =
      write_chrome_trace(trace_path(), events, TraceLimits{}, {{"algorithm", "sync_easgd"}, {"ranks", "4"}});
  EXPECT_EQ(summary.events_in, 4u);
  EXPECT_EQ(summary.events_written, 4u);
  EXPECT_EQ(summary.events_dropped, 0u);
  EXPECT_EQ(summary.bytes, std::filesystem::file_size(trace_path()));
  EXPECT_EQ(files_in_dir(), 1u) << "no temporary file left beside the trace";

  const Json trace = read_trace();
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");

  const auto thread_names = events_with_phase(trace, "M");
  std::map<int, std::string> names;  // expectation: ranks 0, 1, 3, each named once
  for (const Json* event : thread_names) {
    EXPECT_EQ(event->at("name"), "thread_name");
    EXPECT_EQ(event->at("pid"), 0);
    names[event->at("tid").get<int>()] = event->at("args").at("name").get<std::string>();
  }
  EXPECT_EQ(thread_names.size(), 3u);
  EXPECT_EQ(names, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}, {3, "rank 3"}}));

  const auto complete = events_with_phase(trace, "X");
  ASSERT_EQ(complete.size(), 4u);
  // Written in input order; 0.25 s = 250000 us, exact in binary.
  EXPECT_EQ(complete[0]->at("tid"), 0);
  EXPECT_EQ(complete[0]->at("pid"), 0);
  EXPECT_EQ(complete[0]->at("name"), "for/backward");
  EXPECT_EQ(complete[0]->at("ts").get<double>(), 0.0);
  EXPECT_EQ(complete[0]->at("dur").get<double>(), 250000.0);
  EXPECT_EQ(complete[1]->at("name"), "gpu-gpu para");
  EXPECT_EQ(complete[1]->at("ts").get<double>(), 500000.0);
  EXPECT_EQ(complete[1]->at("dur").get<double>(), 125000.0);
  EXPECT_EQ(complete[2]->at("name"), "wait");
  EXPECT_EQ(complete[2]->at("dur").get<double>(), 1500000.0);
  EXPECT_EQ(complete[3]->at("tid"), 3);
  EXPECT_EQ(complete[3]->at("name"), "cpu update");

  const Json& other = trace.at("otherData");
  EXPECT_EQ(other.at("algorithm"), "sync_easgd");
  EXPECT_EQ(other.at("ranks"), "4");
  EXPECT_EQ(other.at("events_in"), 4);
  EXPECT_EQ(other.at("events_written"), 4);
  EXPECT_EQ(other.at("events_dropped"), 0);
  EXPECT_EQ(other.at("max_events"), 200000);
  EXPECT_TRUE(other.at("drop_rule").is_string());
}

TEST_F(ReportsTrace, EmptyInputIsAValidEmptyTrace) {
  const TraceSummary summary = write_chrome_trace(trace_path(), {}, TraceLimits{});
  EXPECT_EQ(summary.events_written, 0u);
  const Json trace = read_trace();
  EXPECT_TRUE(trace.at("traceEvents").empty());
  EXPECT_EQ(trace.at("otherData").at("events_in"), 0);
}

TEST_F(ReportsTrace, MetadataStringsAreEscaped) {
  const std::map<std::string, std::string> metadata = {
      {"command", "dsgd run --note \"a \\ b\"\n\ttab"}, {"control", std::string("x\x01y")}, {"unicode", "1×28µs"}};
  write_chrome_trace(trace_path(), std::vector<TraceEvent>{{0, Category::kNetwork, 0, 1}}, TraceLimits{}, metadata);
  const Json other = read_trace().at("otherData");
  for (const auto& [key, value] : metadata) EXPECT_EQ(other.at(key), value) << key;
}

TEST_F(ReportsTrace, BoundKeepsEachRanksEarliestEventsAndRecordsDrops) {
  // 10 ranks x 1000 events, interleaved, each rank's starts descending so "earliest" differs from "first".
  constexpr int kRanks = 10;
  constexpr int kPerRank = 1000;
  std::vector<TraceEvent> events;
  for (int j = 0; j < kPerRank; ++j) {
    for (int rank = 0; rank < kRanks; ++rank) {
      events.push_back({rank, Category::kForwardBackward, (kPerRank - 1 - j) * 1e-3, 1e-4});
    }
  }
  const TraceSummary summary = write_chrome_trace(trace_path(), events, TraceLimits{.max_events = 500});
  EXPECT_EQ(summary.events_in, 10000u);
  EXPECT_EQ(summary.events_written, 500u);
  EXPECT_EQ(summary.events_dropped, 9500u);

  const Json trace = read_trace();
  EXPECT_LE(events_with_phase(trace, "X").size(), 500u);
  EXPECT_EQ(events_with_phase(trace, "M").size(), 10u);
  const auto by_rank = complete_events_by_rank(trace);
  ASSERT_EQ(by_rank.size(), 10u) << "every rank keeps some events";
  for (const auto& [rank, kept] : by_rank) {
    EXPECT_EQ(kept.size(), 50u) << "rank " << rank << ": expectation 500 / 10 ranks";
    // The earliest 50 starts are 0 .. 49 ms.
    for (const Json* event : kept) EXPECT_LT(event->at("ts").get<double>(), 49500.0) << "rank " << rank;
  }
  const Json& other = trace.at("otherData");
  EXPECT_EQ(other.at("events_in"), 10000);
  EXPECT_EQ(other.at("events_written"), 500);
  EXPECT_EQ(other.at("events_dropped"), 9500);
  EXPECT_EQ(other.at("max_events"), 500);
  EXPECT_NE(other.at("drop_rule").get<std::string>().find("per rank"), std::string::npos);
}

TEST_F(ReportsTrace, UnusedShareGoesToBusierRanksAndRemainderToLowRanks) {
  std::vector<TraceEvent> events;
  for (int j = 0; j < 2; ++j) events.push_back({0, Category::kWait, j * 1.0, 0.5});
  for (int rank = 1; rank <= 2; ++rank) {
    for (int j = 0; j < 100; ++j) events.push_back({rank, Category::kNetwork, j * 1.0, 0.5});
  }
  auto kept_counts = [&](std::size_t max_events) {
    write_chrome_trace(trace_path(), events, TraceLimits{.max_events = max_events});
    std::map<int, std::size_t> counts;
    for (const auto& [rank, kept] : complete_events_by_rank(read_trace())) counts[rank] = kept.size();
    return counts;
  };
  // Rank 0 needs only 2 of its equal share of 17; ranks 1 and 2 split the other 50.
  EXPECT_EQ(kept_counts(52), (std::map<int, std::size_t>{{0, 2}, {1, 25}, {2, 25}}));
  // One left over after equal quotas of 25: the lower rank gets it.
  EXPECT_EQ(kept_counts(53), (std::map<int, std::size_t>{{0, 2}, {1, 26}, {2, 25}}));
  // Fewer slots than ranks: one each to the lowest ranks.
  EXPECT_EQ(kept_counts(2), (std::map<int, std::size_t>{{0, 1}, {1, 1}}));
}

TEST_F(ReportsTrace, BadInputIsAnInputErrorAndWritesNothing) {
  const std::vector<TraceEvent> good = {{0, Category::kWait, 0, 1}};
  std::string message = input_error([&] { write_chrome_trace(trace_path(), good, TraceLimits{.max_events = 0}); });
  EXPECT_NE(message.find("max_events"), std::string::npos) << message;

  const double kNan = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<TraceEvent, std::string>> bad = {
      {{4, Category::kWait, -1.0, 1.0}, "start_s"},           {{4, Category::kWait, 1.0, -0.5}, "duration_s"},
      {{4, Category::kWait, kNan, 1.0}, "start_s"},           {{4, Category::kWait, 1.0, kInf}, "duration_s"},
      {{4, Category::kWait, 1e303, 1.0}, "start_s"},  // finite in seconds, infinite in microseconds
      {{4, static_cast<Category>(99), 1.0, 1.0}, "category"},
  };
  for (const auto& [event, field] : bad) {
    const std::vector<TraceEvent> events = {good[0], event};
    message = input_error([&] { write_chrome_trace(trace_path(), events, TraceLimits{}); });
    EXPECT_NE(message.find("trace event 1 (rank 4)"), std::string::npos) << message;
    EXPECT_NE(message.find(field), std::string::npos) << message;
  }
  message = input_error([&] {
    write_chrome_trace(trace_path(), std::vector<TraceEvent>{{-2, Category::kWait, 0, 1}}, TraceLimits{});
  });
  EXPECT_NE(message.find("trace event 0 (rank -2)"), std::string::npos) << message;

  message = input_error([&] { write_chrome_trace(trace_path(), good, TraceLimits{}, {{"events_dropped", "0"}}); });
  EXPECT_NE(message.find("events_dropped"), std::string::npos) << message;

  EXPECT_EQ(files_in_dir(), 0u) << "rejected input leaves no file, temporary or final";
}

TEST_F(ReportsTrace, UnwritablePathIsAnIoErrorNamingIt) {
  // A regular file where a parent folder should be.
  write_chrome_trace(trace_path(), {}, TraceLimits{});
  const auto path = trace_path() / "inner.json";
  const std::string message =
      error_of<IoError>([&] { write_chrome_trace(path, std::vector<TraceEvent>{}, TraceLimits{}); });
  EXPECT_NE(message.find(trace_path().string()), std::string::npos) << message;
}

class ReportsRankBreakdown : public dsgd::testing::ScratchDirTest {};

double parse_double(const std::string& text) {
  double value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  EXPECT_EQ(result.ptr, text.data() + text.size()) << "not a number: " << text;
  return value;
}

std::vector<std::vector<std::string>> read_csv_rows(const std::filesystem::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(read_text_file(path));
  std::string line;
  while (std::getline(lines, line)) {
    EXPECT_FALSE(line.empty() || line.back() != '\r') << "CRLF line ends: " << line;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> cells;
    std::istringstream fields(line);
    std::string cell;
    while (std::getline(fields, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

TEST_F(ReportsRankBreakdown, OneRowPerRankWithTotalsEqualToCategorySums) {
  std::vector<Breakdown> per_rank(3);
  for (std::size_t rank = 0; rank < per_rank.size(); ++rank) {
    for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
      // Values that are not short in decimal, to show full precision survives (0.1 + rank / 3 ...).
      per_rank[rank].add(static_cast<Category>(i), 0.1 * static_cast<double>(i) + static_cast<double>(rank) / 3.0);
    }
  }
  const auto path = dir_ / "sub" / "breakdown.csv";
  write_rank_breakdown_csv(path, per_rank);

  const auto rows = read_csv_rows(path);
  ASSERT_EQ(rows.size(), 4u) << "header + one row per rank";
  std::vector<std::string> header = {"rank"};
  for (const auto name : kCategoryNames) header.emplace_back(name);
  header.emplace_back("total_s");
  EXPECT_EQ(rows[0], header);
  for (std::size_t rank = 0; rank < per_rank.size(); ++rank) {
    const auto& row = rows[rank + 1];
    ASSERT_EQ(row.size(), kCategoryNames.size() + 2);
    EXPECT_EQ(row[0], std::to_string(rank));
    double sum = 0;
    for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
      const double seconds = parse_double(row[i + 1]);
      EXPECT_EQ(seconds, per_rank[rank].seconds[i]) << "rank " << rank << " " << kCategoryNames[i];
      sum += seconds;
    }
    EXPECT_EQ(parse_double(row.back()), sum) << "rank " << rank << ": expectation is the sum of the categories";
  }
}

TEST_F(ReportsRankBreakdown, NonFiniteSecondsAreAnInputErrorAndWriteNothing) {
  std::vector<Breakdown> per_rank(2);
  per_rank[1].add(Category::kNetwork, std::numeric_limits<double>::infinity());
  const std::string message = input_error([&] { write_rank_breakdown_csv(dir_ / "b.csv", per_rank); });
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
  EXPECT_NE(message.find("network"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "b.csv"));
}

}  // namespace
}  // namespace dsgd::reports
