// `dsgd validate` end to end on a synthetic calibrated platform and synthetic data: two algorithms of the catalog
// (the first without a master and the first with one, picked from the catalog: tests name none) on threads and
// MPI, a few iterations. Checks the table's shape and the results file -- never how close the predictions are.
// And bad options, rejected with one line each.

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "app/cli.hpp"
#include "core/subprocess.hpp"
#include "measure/calibration.hpp"
#include "measure/kernel_calibration.hpp"
#include "platforms/catalog.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::app {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The real executable, as a user runs it: its exit code and what it printed.
ProcessResult dsgd(const std::vector<std::string>& args) { return dsgd::testing::run_dsgd_executable(args); }

class AppValidate : public dsgd::testing::ScratchDirTest {
 protected:
  // platform.json and platform-threads.json as dsgd calibrate writes them, from synthetic numbers.
  void write_platforms() {
    measure::CalibrationInput input;
    input.cpu = measure::parse_cpuinfo(
        "processor : 0\nvendor_id : GenuineIntel\ncpu family : 6\ncpu MHz : 2000\nphysical id : 0\ncore id : 0\n"
        "flags : avx2 fma\n\nprocessor : 1\nphysical id : 0\ncore id : 1\n");
    std::vector<measure::PingPongPoint> points;
    for (double bytes = 8; bytes < (1 << 24); bytes *= 2) points.push_back({bytes, 2 * (1e-6 + bytes / 4e9)});
    input.segments = measure::fit_alpha_beta(points, {});
    measure::KernelCalibration kernels;
    kernels.kernels = {{"conv", "synthetic", 16e9, 1, 1.0}, {"elementwise", "synthetic", 6.4e9, 1, 1.0}};
    kernels.memory = {"memory", "synthetic", 10e9, 1, 1.0};
    for (const auto& name : {"platform", "platform-threads"}) {
      auto platform = measure::calibrated_platform(input);
      measure::apply_kernel_calibration(platform, kernels, "test");
      measure::write_platform_file(dir_ / (std::string(name) + ".json"), platform);
    }
  }

  // `dsgd validate` on the platforms of write_platforms and a synthetic idx folder, a few iterations of batch 8
  // with no retries, and `extra` options.
  ProcessResult validate(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"validate",
                                  "--platform",
                                  (dir_ / "platform.json").string(),
                                  "--data",
                                  "idx:" + dir_.string(),
                                  "--batch",
                                  "8",
                                  "--warmup",
                                  "2",
                                  "--iterations",
                                  "4",
                                  "--retries",
                                  "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return dsgd(args);
  }

  // One row of `dsgd validate` (one run): the catalog's first algorithm on threads, with `extra` options; its
  // results entry.
  reports::Entry validate_one_row(const std::vector<std::string>& extra) {
    const auto file = dir_ / "validate.json";
    std::vector<std::string> args{"--algos",       algorithms::algorithm_catalog().front().info.name,
                                  "--executors",   "threads",
                                  "--repetitions", "1",
                                  "--results",     file.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = validate(args);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    const auto entries = reports::read_results(file).benchmarks;
    EXPECT_EQ(entries.size(), 1U);
    return entries.empty() ? reports::Entry{} : entries.front();
  }
};

TEST_F(AppValidate, BadOptionsAreOneLineErrors) {
  const auto one_line_usage_error = [](const ProcessResult& result, const std::string& part) {
    EXPECT_EQ(result.exit_code, kExitUsage) << result.output;
    EXPECT_TRUE(contains(result.output, part)) << result.output;
    EXPECT_EQ(result.output.find('\n'), result.output.size() - 1) << "one line: " << result.output;
  };
  one_line_usage_error(dsgd({"validate", "--warmup", "10", "--iterations", "15"}), "must be a positive multiple of");
  one_line_usage_error(dsgd({"validate", "--executors", "gpu"}),
                       "unknown executor 'gpu'; valid values are: threads, mpi");
  one_line_usage_error(dsgd({"validate", "--algos", "no-such-algorithm"}), "unknown algorithm 'no-such-algorithm'");
  one_line_usage_error(dsgd({"validate", "--workers", "0"}), "--workers must be at least 1");
  one_line_usage_error(dsgd({"validate", "--drift", "0"}), "--drift must be > 0");
  one_line_usage_error(dsgd({"validate", "--kernel-repetitions", "0"}), "--kernel-repetitions must be at least 1");
  one_line_usage_error(dsgd({"validate", "--repetitions", "0"}), "--repetitions must be at least 1");
  one_line_usage_error(dsgd({"validate", "--platform", (dir_ / "missing.json").string()}), "missing.json");
  write_platforms();
  std::filesystem::remove(dir_ / "platform-threads.json");
  one_line_usage_error(dsgd({"validate", "--platform", (dir_ / "platform.json").string(), "--executors", "threads"}),
                       "platform-threads.json");
}

TEST_F(AppValidate, TableHasARowPerAlgorithmAndExecutor) {
  write_platforms();
  dsgd::testing::write_synthetic_idx_folder(dir_, 160, 40);
  std::string without_master;
  std::string with_master;
  for (const auto& entry : algorithms::algorithm_catalog()) {
    auto& slot = entry.info.has_master ? with_master : without_master;
    if (slot.empty()) slot = entry.info.name;
  }
  const auto file = dir_ / "validate.json";
  const auto result = validate({"--algos", without_master + "," + with_master, "--kernel-repetitions", "2",
                                "--repetitions", "3", "--results", file.string()});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::istringstream lines(result.output);
  std::vector<std::string> rows;
  bool header = false;
  for (std::string line; std::getline(lines, line);) {
    if (contains(line, "measured s/it") && contains(line, "predicted s/it") && contains(line, "error") &&
        contains(line, "spread")) {
      header = true;
    }
    if (line.rfind(without_master + " ", 0) == 0 || line.rfind(with_master + " ", 0) == 0) rows.push_back(line);
  }
  EXPECT_TRUE(header) << result.output;
  ASSERT_EQ(rows.size(), 4U) << result.output;
  EXPECT_TRUE(contains(rows[0], " threads ") && contains(rows[0], "%")) << rows[0];
  EXPECT_TRUE(contains(rows[1], " mpi ")) << rows[1];
  EXPECT_TRUE(contains(rows[3], " 3 ")) << "the master is a third rank: " << rows[3];
  EXPECT_TRUE(contains(result.output, " of 4 within 15%; worst: ")) << result.output;

  const auto entries = reports::read_results(file).benchmarks;
  ASSERT_EQ(entries.size(), 4U);
  for (const auto& entry : entries) {
    EXPECT_TRUE(entry.name.rfind("validate/", 0) == 0) << entry.name;
    EXPECT_GT(entry.counters.at("measured_s_per_iteration"), 0) << entry.name;
    EXPECT_GT(entry.counters.at("predicted_s_per_iteration"), 0) << entry.name;
    EXPECT_TRUE(entry.counters.count("error") == 1) << entry.name;
    // Three runs, each predicted from the kernels timed around it: the row is the median run by error.
    EXPECT_EQ(entry.counters.at("runs"), 3) << entry.name;
    std::vector<std::pair<double, int>> errors;
    for (int run = 0; run < 3; ++run) {
      const std::string each = "repetition" + std::to_string(run) + "_";
      const double measured = entry.counters.at(each + "measured_s_per_iteration");
      const double predicted = entry.counters.at(each + "predicted_s_per_iteration");
      EXPECT_GT(measured, 0) << entry.name;
      errors.emplace_back((predicted - measured) / measured, run);
    }
    std::sort(errors.begin(), errors.end());
    const std::string median = "repetition" + std::to_string(errors[1].second) + "_";
    EXPECT_EQ(entry.counters.at("measured_s_per_iteration"), entry.counters.at(median + "measured_s_per_iteration"))
        << entry.name;
    EXPECT_EQ(entry.counters.at("predicted_s_per_iteration"), entry.counters.at(median + "predicted_s_per_iteration"))
        << entry.name;
    EXPECT_DOUBLE_EQ(entry.counters.at("error"), errors[1].first) << entry.name;
    EXPECT_GT(entry.counters.at("predicted_s_per_iteration:for/backward"), 0) << entry.name;
    // The measured breakdown after the warm-up round, over --iterations 4 of the three runs: the runs' sum less
    // their first rounds'.
    const double steady_s = entry.counters.at("measured_s_per_iteration:for/backward");
    EXPECT_GT(steady_s, 0) << entry.name;
    EXPECT_NEAR(steady_s * 4 * 3,
                entry.breakdown_s.at("for/backward") - entry.counters.at("first_round_s:for/backward"), 1e-9)
        << entry.name;
    EXPECT_GT(entry.counters.at("first_round_s:for/backward"), 0) << entry.name;
    EXPECT_EQ(entry.counters.count("kernel_drift"), 1U) << entry.name;
    EXPECT_TRUE(contains(entry.labels.at("prediction"), "kernels timed before and after each run")) << entry.name;
    EXPECT_EQ(entry.platform, "this-machine") << "the calibrated platform re-timed, under its own name";
  }
}

TEST_F(AppValidate, FileKernelsPredictWithThePlatformFilesTimings) {
  write_platforms();
  // A forward/backward at a ten-thousandth of the peak in the file: far slower than any real timing of it.
  const auto path = dir_ / "platform-threads.json";
  auto platform = platforms::load_platform(path.string());
  platform.nodes.cpu.efficiency.by_class["conv"] = 1e-4;
  measure::write_platform_file(path, platform);
  dsgd::testing::write_synthetic_idx_folder(dir_, 160, 40);
  const auto from_file = validate_one_row({"--file-kernels"});
  EXPECT_EQ(from_file.counters.count("kernel_drift"), 0U);
  EXPECT_TRUE(contains(from_file.labels.at("prediction"), "kernels of the file"));
  const auto retimed = validate_one_row({"--kernel-repetitions", "2"});
  EXPECT_LT(retimed.counters.at("predicted_s_per_iteration:for/backward"),
            from_file.counters.at("predicted_s_per_iteration:for/backward") / 10);
}

TEST_F(AppValidate, RetimedKernelsKeepTheFilesNoise) {
  write_platforms();
  dsgd::testing::write_synthetic_idx_folder(dir_, 160, 40);
  const auto path = dir_ / "platform-threads.json";
  ASSERT_EQ(algorithms::algorithm_catalog().front().info.synchronous, true) << "its workers wait for the slowest";
  // The predicted exchange of a synchronous algorithm, where a worker waits for the slowest, with `noise` in the file
  // and the kernels re-timed around the run (2 repetitions: a spread too short to measure a noise from).
  const auto predicted_exchange_s = [&](const platforms::Noise& noise) {
    auto platform = platforms::load_platform(path.string());
    platform.noise = noise;
    measure::write_platform_file(path, platform);
    const auto entry = validate_one_row({"--kernel-repetitions", "2"});
    EXPECT_TRUE(contains(entry.labels.at("prediction"), "noise of the file"));
    return entry.counters.at("predicted_s_per_iteration:gpu-gpu para");
  };
  platforms::Noise noisy;
  noisy.distribution = platforms::NoiseDistribution::kLognormal;
  noisy.spread = 0.5;
  noisy.sources["sigma"] = "this test";
  const double quiet_s = predicted_exchange_s(platforms::Noise{});
  const double noisy_s = predicted_exchange_s(noisy);
  EXPECT_GT(noisy_s, quiet_s * 1.5) << "a sigma of 0.5 in the file makes the slowest worker the others wait for";
}

}  // namespace
}  // namespace dsgd::app
