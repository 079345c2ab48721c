// measure/transport_entries: a transport's row as seed 001's tables put it, and those tables' published rows.

#include "measure/transport_entries.hpp"

#include <gtest/gtest.h>

namespace dsgd::measure {
namespace {

TEST(MeasureTransportEntries, ARowGivesLatencyAndBandwidthOfItsOneWayTime) {
  const auto entry = transport_entry("memcpy", "threads", "measured", 524288, 1e-4, "host copy");
  EXPECT_EQ(entry.name, "transport/memcpy/524288");
  EXPECT_DOUBLE_EQ(entry.counters.at("latency_us"), 100);
  EXPECT_DOUBLE_EQ(entry.counters.at("bandwidth_MBps"), 5242.88);
  EXPECT_EQ(entry.labels.at("seed_size"), "yes");
  EXPECT_EQ(transport_entry("memcpy", "threads", "measured", 4096, 1e-6, "").labels.at("seed_size"), "no");
}

TEST(MeasureTransportEntries, TheSeedsTablesGiveSevenSizesOfFiveTransports) {
  const auto entries = seed001_transport_entries();
  ASSERT_EQ(entries.size(), 35U);
  // Table I's 1.11 us for a byte over host shared memory, beside Table II's own bandwidth for it.
  EXPECT_EQ(entries[0].algorithm, "seed 001: shared memory, host");
  EXPECT_DOUBLE_EQ(entries[0].counters.at("latency_us"), 1.11);
  EXPECT_DOUBLE_EQ(entries[0].counters.at("bandwidth_MBps"), 1.76);
  EXPECT_EQ(entries[0].executor, "published");
}

}  // namespace
}  // namespace dsgd::measure
