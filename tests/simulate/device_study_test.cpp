// simulate/device_study.hpp: published single-device rates predicted by the kernel model by shape. The P100
// study holds issue 43's bound -- one efficiency FITTED on one rate, every other model and batch within 15% --
// and a platform whose device has no kernel model is refused.
#include "simulate/device_study.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "platforms/catalog.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

TEST(SimulateDeviceStudy, P100RatesArePredictedWithin15PercentFromOneFittedEfficiency) {
  const auto outcome = run_device_study(algorithms::find_device_study("p100"));
  EXPECT_GT(outcome.efficiency, 0);
  EXPECT_LE(outcome.efficiency, 1);
  int fitted = 0;
  for (const auto& row : outcome.rows) {
    const std::string what = row.model + " at batch " + std::to_string(row.batch);
    if (row.determined == Determined::kFitted) {
      ++fitted;
      EXPECT_NEAR(row.difference_percent, 0, 1e-3) << what;
      continue;
    }
    EXPECT_LE(std::abs(row.difference_percent), 15)
        << what << ": " << row.images_per_second << " against " << row.published;
    if (row.model == "vgg16") {
      EXPECT_GT(row.iteration.winograd_kernels, 0) << "VGG's 3x3s run as Winograd";
    }
  }
  EXPECT_EQ(fitted, 1);
  EXPECT_NE(format_device_study(outcome).find("FITTED kernel-model efficiency"), std::string::npos);
}

// k80-dmath carries the efficiency the k80 study fits, which the dMath tables use: the two must not drift apart.
TEST(SimulateDeviceStudy, TheK80sCatalogEfficiencyIsTheOneItsStudyFits) {
  const auto& study = algorithms::find_device_study("k80");
  const auto outcome = run_device_study(study);
  const platforms::Platform platform = platforms::load_platform(study.platform);
  ASSERT_TRUE(platform.nodes.devices.front().kernels);
  EXPECT_NEAR(platform.nodes.devices.front().kernels->efficiency, outcome.efficiency, 5e-5);
  EXPECT_NE(platform.nodes.devices.front().kernels->sources.at("efficiency").find("FITTED"), std::string::npos);
}

TEST(SimulateDeviceStudy, ASmallerBatchIsSlowerPerImage) {
  const auto outcome = run_device_study(algorithms::find_device_study("p100"));
  for (const auto& large : outcome.rows) {
    for (const auto& small : outcome.rows) {
      if (small.model == large.model && small.batch < large.batch) {
        EXPECT_LT(small.images_per_second, large.images_per_second) << large.model;
      }
    }
  }
}

TEST(SimulateDeviceStudy, ADeviceWithoutAKernelModelIsRefused) {
  algorithms::DeviceStudy study = algorithms::find_device_study("p100");
  study.platform = "m40-cluster";
  EXPECT_TRUE(dsgd::testing::input_error([&] {
                run_device_study(study);
              }).ends_with("the device study needs a device with a kernel model ('kernels')"));
}

}  // namespace
}  // namespace dsgd::simulate
