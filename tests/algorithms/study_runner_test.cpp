// algorithms/study_runner: which runs a study trains and how each entry is labelled -- every run at every
// configuration, a learning-rate sweep at the first whose best rate is used everywhere (and not trained twice), and
// the next lower rates of the sweep where the chosen one diverges. The training is a stand-in with known answers.

#include "algorithms/study_runner.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::algorithms {
namespace {

Study two_run_study() {
  return {"test-study", "two runs", [](const StudySettings& settings) {
            std::vector<StudyRun> runs(2);
            runs[0].label = "a";
            runs[1].label = "b";
            runs[1].labels = {{"series", "second"}};
            for (auto& run : runs) run.options.workers = settings.workers;
            return runs;
          }};
}

// Accuracy falls with the rate's distance from 0.1; a rate above 0.05 diverges on 8 workers.
reports::Entry stand_in(const RunOptions& options, const std::string& platform) {
  reports::Entry entry;
  entry.name = platform;
  const double rate = options.hyper.learning_rate;
  const bool diverged = options.workers == 8 && rate > 0.05;
  entry.labels["stop_reason"] = diverged ? "diverged" : "budget";
  if (!diverged) entry.counters["test_accuracy"] = 1 - std::abs(rate - 0.1);
  return entry;
}

TEST(StudyRunner, TheSweepsBestRateRunsEverywhereAndDivergenceFallsBackToLowerRates) {
  StudyPlan plan;
  plan.workers = {4, 8};
  plan.lr_sweep = {0.01F, 0.1F, 1.0F};
  std::vector<std::string> trained;
  std::vector<reports::Entry> kept;
  std::ostringstream log;
  run_study(
      two_run_study(), {}, plan,
      [&](const RunOptions& options, const std::string& platform, const std::string& label, const std::string&) {
        trained.push_back(label + "@" + std::to_string(options.workers) + ":" +
                          significant(options.hyper.learning_rate, 6));
        return stand_in(options, platform);
      },
      [&](reports::Entry entry) { kept.push_back(std::move(entry)); }, log);
  // 3 rates x 2 runs at 4 workers; at 8 workers 0.1 diverges and 0.01 is tried, per run. 4 workers' best is not
  // trained again.
  const std::vector<std::string> expected{"a@4:0.01", "a@4:0.1", "a@4:1",    "b@4:0.01", "b@4:0.1",
                                          "b@4:1",    "a@8:0.1", "a@8:0.01", "b@8:0.1",  "b@8:0.01"};
  EXPECT_EQ(trained, expected);
  ASSERT_EQ(kept.size(), 12U);
  EXPECT_EQ(kept[6].labels.at("phase"), "chosen") << "the sweep's best, kept again for the first configuration";
  EXPECT_EQ(kept[6].labels.at("lr"), "0.1");
  EXPECT_EQ(kept[8].labels.at("phase"), "diverged");
  EXPECT_EQ(kept[9].labels.at("lr"), "0.01");
  EXPECT_EQ(kept[9].labels.at("workers"), "8");
  EXPECT_EQ(kept[11].labels.at("series"), "second");
  EXPECT_EQ(kept[11].labels.at("study"), "test-study");
}

TEST(StudyRunner, WithoutASweepEachRunTrainsOncePerConfiguration) {
  StudyPlan plan;
  plan.workers = {2};
  plan.platforms = {"p1", "p2"};
  plan.overridden = [](RunOptions options) {
    options.hyper.learning_rate = 0.2F;
    return options;
  };
  std::vector<reports::Entry> kept;
  std::ostringstream log;
  run_study(
      two_run_study(), {}, plan,
      [](const RunOptions& options, const std::string& platform, const std::string&, const std::string&) {
        return stand_in(options, platform);
      },
      [&](reports::Entry entry) { kept.push_back(std::move(entry)); }, log);
  ASSERT_EQ(kept.size(), 4U);
  EXPECT_EQ(kept[2].name, "p2");
  EXPECT_EQ(kept[2].labels.at("lr"), "0.2");
  EXPECT_EQ(kept[2].labels.count("phase"), 0U);
  plan.workers.clear();
  EXPECT_THROW(run_study(two_run_study(), {}, plan, {}, {}, log), InputError);
}

}  // namespace
}  // namespace dsgd::algorithms
