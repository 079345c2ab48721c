// Seed 002's lost-update experiment (measure/lost_updates.hpp). It is a measurement: how many additions two racing
// threads lose depends on the machine and the moment, so the tests assert only what holds on any machine -- a
// count between 0 and the additions, nothing lost by one thread or by fetch_add -- and the argument errors.
#include "measure/lost_updates.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "core/error.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::measure {
namespace {

constexpr LostUpdateVariant kVariants[] = {LostUpdateVariant::kSpread, LostUpdateVariant::kHot,
                                           LostUpdateVariant::kFetchAdd};

TEST(MeasureLostUpdates, OneThreadLosesNothing) {
  for (const auto variant : kVariants) {
    const auto run = run_lost_updates(variant, 1, 1000, 200);
    EXPECT_EQ(run.additions, 200 * 1000) << to_string(variant);
    EXPECT_EQ(run.lost, 0) << to_string(variant);
    EXPECT_GT(run.seconds, 0) << to_string(variant);
  }
}

TEST(MeasureLostUpdates, RacingThreadsLoseBetweenNoneAndAll) {
  for (const auto variant : {LostUpdateVariant::kSpread, LostUpdateVariant::kHot}) {
    for (const std::size_t floats : {std::size_t{16}, std::size_t{1000}}) {
      const auto run = run_lost_updates(variant, 3, floats, 20000);
      EXPECT_EQ(run.additions, 3 * 20000 * static_cast<std::int64_t>(floats));
      EXPECT_GE(run.lost, 0) << to_string(variant) << ", " << floats << " floats";
      EXPECT_LE(run.lost, run.additions) << to_string(variant) << ", " << floats << " floats";
      // At most 3 threads' worth of CPU time in the wall time (plus the CPU clocks' tick).
      EXPECT_GE(run.cpu_seconds, 0);
      EXPECT_LE(run.cpu_seconds, 3 * run.seconds + 0.01);
    }
  }
}

TEST(MeasureLostUpdates, FetchAddLosesNothingEvenOnOneCacheLine) {
  for (const int threads : {2, 4}) {
    const auto run = run_lost_updates(LostUpdateVariant::kFetchAdd, threads, 16, 20000);
    EXPECT_EQ(run.additions, threads * 20000 * 16);
    EXPECT_EQ(run.lost, 0) << threads << " threads";
  }
}

TEST(MeasureLostUpdates, AutomaticAdditionsKeepFloatSumsExact) {
  const auto run = run_lost_updates(LostUpdateVariant::kHot, 2, 16, 0);
  EXPECT_GE(run.additions_per_element, 1);
  EXPECT_LT(2 * run.additions_per_element, kMaxExactFloatSum);
  EXPECT_EQ(run.additions, 2 * run.additions_per_element * 16);
  EXPECT_LE(run.additions, kAutoAdditionsPerRun);
}

TEST(MeasureLostUpdates, SweepsEveryThreadCountAndSizeInOrder) {
  LostUpdateOptions options;
  options.variant = LostUpdateVariant::kFetchAdd;
  options.threads = {1, 2};
  options.floats = {16, 100};
  options.additions_per_element = 1000;
  options.repeats = 2;
  int seen = 0;
  const auto rows = measure_lost_updates(options, [&](const LostUpdateRow&) { ++seen; });
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(seen, 4);
  const std::pair<int, std::size_t> expected[] = {{1, 16}, {1, 100}, {2, 16}, {2, 100}};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].threads, expected[i].first);
    EXPECT_EQ(rows[i].floats, expected[i].second);
    EXPECT_EQ(rows[i].additions, rows[i].threads * 1000 * static_cast<std::int64_t>(rows[i].floats));
    EXPECT_EQ(rows[i].lost, (std::vector<std::int64_t>{0, 0}));
    EXPECT_EQ(rows[i].seconds.size(), 2U);
    EXPECT_EQ(rows[i].cpu_seconds.size(), 2U);
    EXPECT_EQ(rows[i].lost_percent(), 0);
    EXPECT_GT(rows[i].additions_per_second(), 0);
  }
}

TEST(MeasureLostUpdates, DefaultsAreTheHardwareThreadsAndThreeSizes) {
  EXPECT_EQ(default_lost_update_floats(LostUpdateVariant::kSpread), (std::vector<std::size_t>{1000, 100000, 1000000}));
  EXPECT_EQ(default_lost_update_floats(LostUpdateVariant::kHot), (std::vector<std::size_t>{16}));
  LostUpdateOptions options;
  options.variant = LostUpdateVariant::kHot;
  options.additions_per_element = 10;
  options.repeats = 1;
  const auto rows = measure_lost_updates(options);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().threads, 1);
  EXPECT_EQ(rows.back().threads, static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
}

TEST(MeasureLostUpdates, VariantNamesRoundTrip) {
  for (const auto variant : kVariants) EXPECT_EQ(lost_update_variant_from_string(to_string(variant)), variant);
  EXPECT_EQ(testing::error_of<UnknownNameError>([] { lost_update_variant_from_string("cold"); }),
            "unknown lost-update variant 'cold'; valid values are: spread, hot, fetch-add");
}

TEST(MeasureLostUpdates, RefusesBadArguments) {
  const auto spread = LostUpdateVariant::kSpread;
  EXPECT_EQ(testing::input_error([&] { run_lost_updates(spread, 0, 16, 10); }),
            "lost updates: thread counts must be at least 1, got 0");
  EXPECT_EQ(testing::input_error([&] { run_lost_updates(spread, 1, 0, 10); }),
            "lost updates: vector sizes must be at least 1 float, got 0");
  EXPECT_EQ(testing::input_error([&] { run_lost_updates(spread, 1, 16, -1); }),
            "lost updates: additions per element must be at least 1 (or 0 for automatic), got -1");
  EXPECT_EQ(testing::input_error([&] { run_lost_updates(spread, 2, 16, 1 << 23); }),
            "lost updates: threads x additions per element = 2 x 8388608 must stay below 2^24 = 16777216 so that "
            "float sums are exact");
  LostUpdateOptions options;
  options.threads = {1, 2};
  options.floats = {16};
  options.repeats = 0;
  EXPECT_EQ(testing::input_error([&] { measure_lost_updates(options); }),
            "lost updates: repeats must be at least 1, got 0");
  // The largest thread count is checked before the first run.
  options.repeats = 1;
  options.additions_per_element = (1 << 23) + 1;
  int ran = 0;
  EXPECT_NE(testing::input_error([&] { measure_lost_updates(options, [&](const LostUpdateRow&) { ++ran; }); }), "");
  EXPECT_EQ(ran, 0);
}

}  // namespace
}  // namespace dsgd::measure
