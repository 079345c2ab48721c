// measure/validation.hpp: dsgd validate's measurement policy without the command -- the steady seconds per
// iteration of a run's rounds, the disturbance that has a run measured again, the median run by error of a row, and
// the platform a run is predicted on. On synthetic numbers with known answers.

#include "measure/validation.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "measure/calibration.hpp"

namespace dsgd::measure {
namespace {

TEST(MeasureValidation, SteadySecondsPerIterationIsTheMedianRoundAfterTheWarmUp) {
  // Rounds of 10 iterations; the warm-up round (to 0.5 s) is slow and left out, and a burst of load doubles one of
  // the four measured rounds without moving the median.
  const std::vector<std::pair<double, double>> by_time{{0.9, 0.1}, {1.9, 0.2}, {2.9, 0.3}, {4.9, 0.4}, {5.9, 0.5}};
  const std::vector<std::pair<double, double>> by_iteration{{10, 0.1}, {20, 0.2}, {30, 0.3}, {40, 0.4}, {50, 0.5}};
  EXPECT_DOUBLE_EQ(steady_seconds_per_iteration(by_time, by_iteration), 0.1);

  const std::vector<std::pair<double, double>> one_round{{0.9, 0.1}};
  EXPECT_THROW(steady_seconds_per_iteration(one_round, one_round), InputError) << "no round after the warm-up";
  EXPECT_THROW(steady_seconds_per_iteration(by_time, one_round), InputError) << "curves of different lengths";
}

TEST(MeasureValidation, DisturbanceIsTheLargerOfLoadAndDriftInTolerances) {
  const RunPolicy policy{.retries = 2, .busy_cores = 0.25, .max_drift = 0.05};
  RunMeasurement run;
  EXPECT_DOUBLE_EQ(run.disturbance(policy), 0.0);
  run.others_cores = 0.125;
  run.drift = -0.1;
  EXPECT_DOUBLE_EQ(run.disturbance(policy), 2.0) << "a drift of twice the tolerance, either way";
  run.others_cores = 0.75;
  EXPECT_DOUBLE_EQ(run.disturbance(policy), 3.0) << "three times the load tolerated";
}

TEST(MeasureValidation, AnUndisturbedRunIsMeasuredOnceWithTheFilesKernels) {
  RunPolicy policy;
  policy.file_kernels = true;  // no kernel timings around the run, so no drift
  policy.busy_cores = 1e9;     // whatever else runs on this machine, the run counts as undisturbed
  int calls = 0;
  std::ostringstream err;
  const auto measured = measure_run([&] { return ++calls * 0.25; }, {}, policy, err);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(measured.attempt, 0);
  EXPECT_DOUBLE_EQ(measured.seconds_per_iteration, 0.25);
  EXPECT_FALSE(measured.kernels.has_value());
  EXPECT_DOUBLE_EQ(measured.drift, 0.0);
  EXPECT_EQ(err.str(), "") << "no retry, nothing timed";
}

TEST(MeasureValidation, ARowIsItsMedianRunByError) {
  RowRuns runs;
  RunMeasurement run;
  // Errors +10%, -20%, +2%: the median run by error is the third, though neither its measured nor its predicted
  // seconds are the median of theirs.
  for (const auto& [measured, predicted, drift] :
       std::vector<std::tuple<double, double, double>>{{2.0, 2.2, 0.03}, {1.0, 0.8, -0.07}, {4.0, 4.08, 0.05}}) {
    run.seconds_per_iteration = measured;
    run.drift = drift;
    run.others_cores = measured / 10;
    runs.add(run, predicted);
  }
  EXPECT_DOUBLE_EQ(runs.measured(), 4.0);
  EXPECT_DOUBLE_EQ(runs.predicted(), 4.08);
  EXPECT_NEAR(runs.error(), 0.02, 1e-12);
  EXPECT_DOUBLE_EQ(runs.spread(), (4.0 - 1.0) / 4.0) << "slowest minus fastest over the median run's";
  EXPECT_DOUBLE_EQ(runs.others_cores, 0.4) << "the most of any run";
  EXPECT_DOUBLE_EQ(runs.drift, -0.07) << "the largest in size";

  // Of an even number, the two middle runs by error (+2% and +10%), their seconds averaged.
  run.seconds_per_iteration = 1.0;
  runs.add(run, 1.5);
  EXPECT_DOUBLE_EQ(runs.measured(), 3.0);
  EXPECT_DOUBLE_EQ(runs.predicted(), (4.08 + 2.2) / 2);
  EXPECT_DOUBLE_EQ(prediction_error(2.0, 2.5), 0.25);

  EXPECT_THROW(RowRuns{}.median_run(), InputError) << "no runs";
}

TEST(MeasureValidation, AWorldPlatformHasAHostPerRankOnTheChip) {
  platforms::Platform platform;
  platform.nodes.count = 2;
  platforms::SharedChip chip;
  chip.nodes = 2;
  chip.cores = 2;
  chip.waiting_share = 0.02;
  platform.nodes.shared_chip = chip;

  std::string note = "untouched";
  auto world = world_platform(platform, 2, 2, &note);
  EXPECT_EQ(world.nodes.count, 2);
  EXPECT_EQ(note, "untouched") << "no more ranks than cores: nothing to say";

  world = world_platform(platform, 3, 2, &note);
  EXPECT_EQ(world.nodes.count, 3);
  ASSERT_TRUE(world.nodes.shared_chip.has_value());
  EXPECT_EQ(world.nodes.shared_chip->nodes, 3) << "every host on the one chip";
  EXPECT_EQ(world.nodes.shared_chip->cores, 2);
  EXPECT_EQ(note, "3 ranks on 2 cores: a waiting rank takes 0.020 of a core");

  platform.nodes.shared_chip->loaded_link = platforms::Link{};
  world_platform(platform, 3, 2, &note);
  EXPECT_EQ(note,
            "3 ranks on 2 cores: a waiting rank takes 0.020 of a core, a message beside computing ranks the "
            "loaded link");

  platform.nodes.count = 4;
  EXPECT_EQ(world_platform(platform, 3, 4, &note).nodes.count, 4) << "never fewer hosts than the file's";
}

KernelCalibration calibration(double conv_s, int concurrent) {
  KernelCalibration timings;
  timings.kernels = {{"conv", "synthetic conv", 16e9, 10, conv_s, 0.02}, {"elementwise", "synthetic", 1e9, 10, 1.0}};
  timings.memory = {"memory", "synthetic memcpy", 10e9, 10, 1.0};
  timings.concurrent = concurrent;
  return timings;
}

TEST(MeasureValidation, ARunIsPredictedWithTheKernelsTimedAroundItAndTheFilesNoise) {
  CalibrationInput input;
  input.cpu = parse_cpuinfo(
      "processor : 0\nvendor_id : GenuineIntel\ncpu family : 6\ncpu MHz : 2000\nphysical id : 0\ncore id : 0\n"
      "flags : avx2 fma\n\nprocessor : 1\nphysical id : 0\ncore id : 1\n");
  input.segments = fit_alpha_beta({{8, 2e-6}, {1024, 3e-6}, {1 << 20, 1e-3}}, {});
  const auto file = with_kernel_timings(calibrated_platform(input), {calibration(1.0, 2), calibration(0.5, 1)}, "file");
  ASSERT_TRUE(file.nodes.shared_chip.has_value());

  std::string note;
  RunMeasurement run;
  EXPECT_EQ(run_platform(file, run, "here", 3, 2, &note).nodes.cpu.efficiency.of("conv"),
            file.nodes.cpu.efficiency.of("conv"))
      << "no kernels timed around the run: the file's";
  EXPECT_EQ(note, "3 ranks on 2 cores: a waiting rank takes 0.000 of a core");

  run.kernels = KernelTimings{calibration(2.0, 2), std::nullopt};
  run.kernels->busy.kernels[0].log_spread = 0.2;  // a spread the short timing around a run cannot be trusted with
  const auto platform = run_platform(file, run, "here", 3, 2, &note);
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.efficiency.of("conv"), file.nodes.cpu.efficiency.of("conv") / 2)
      << "twice the time around the run: half the efficiency";
  EXPECT_DOUBLE_EQ(platform.noise.spread, 0.02) << "the noise stays the file's";
  EXPECT_EQ(platform.nodes.count, 3);
}

}  // namespace
}  // namespace dsgd::measure
