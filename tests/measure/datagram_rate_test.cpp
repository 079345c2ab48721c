// measure/datagram_rate.hpp: this machine's rate for tagging and checking a full datagram. A measurement, so the
// test asserts only what holds on any machine: a positive rate below memory speed's order and a source that says how.
#include "measure/datagram_rate.hpp"

#include <gtest/gtest.h>

namespace dsgd::measure {
namespace {

TEST(MeasureDatagramRate, APositiveRateWithItsSource) {
  const DatagramRate rate = measure_datagram_rate("test host, now", 0.01);
  EXPECT_GT(rate.bytes_per_s, 1e6);
  EXPECT_LT(rate.bytes_per_s, 1e12);
  EXPECT_NE(rate.source.find("test host, now"), std::string::npos) << rate.source;
  EXPECT_NE(rate.source.find("encoded (tagged)"), std::string::npos) << rate.source;
}

}  // namespace
}  // namespace dsgd::measure
