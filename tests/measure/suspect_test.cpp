#include "measure/suspect.hpp"

#include <gtest/gtest.h>

namespace dsgd::measure {
namespace {

TEST(MeasureSuspect, ABusyMachineIsFlaggedAboveAQuarterOfACore) {
  EXPECT_EQ(busy_machine_warning(0.1), "");
  EXPECT_EQ(busy_machine_warning(kBusyCores), "");
  const auto warning = busy_machine_warning(1.02);
  EXPECT_EQ(warning.rfind("warning: other programs kept 1.02 cores busy", 0), 0U) << warning;
}

TEST(MeasureSuspect, AMeasurementAboveItsBoundIsFlaggedBeyondTheBoundsError) {
  EXPECT_EQ(above_bound_warning("sgd update", 6.8e9, 6.5e9, "the roofline", "FLOP/s"), "") << "within 5%";
  const auto warning = above_bound_warning("lenet elementwise", 8.1e9, 6.5e9, "the roofline", "FLOP/s");
  EXPECT_EQ(warning.rfind("warning: lenet elementwise measured 8.1e+09 FLOP/s, 25% above the roofline", 0), 0U)
      << warning;
  EXPECT_EQ(above_bound_warning("x", 1, 0, "an unknown bound", "B/s"), "") << "no bound, nothing to pass";
}

}  // namespace
}  // namespace dsgd::measure
