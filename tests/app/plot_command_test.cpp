// `dsgd plot`: two real `dsgd simulate` results files to a figure in every format, and its refusals.
#include <gtest/gtest.h>

#include <filesystem>

#include "app/cli.hpp"
#include "core/json.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

namespace fs = std::filesystem;
using dsgd::testing::contains;

class AppPlot : public dsgd::testing::CliScratchTest {
 protected:
  // Weak scaling of `algorithm` on the KNL cluster, 68 and 136 cores, as a user writes it.
  std::string simulated(const std::string& algorithm) {
    const auto path = (dir_ / (algorithm + ".json")).string();
    const auto outcome = dsgd({"simulate", "--algo", algorithm, "--platform", "cori-knl", "--model", "lenet", "--cores",
                               "68,136", "--iterations", "2", "--results", path});
    EXPECT_EQ(outcome.code, 0) << outcome.err;
    return path;
  }
};

TEST_F(AppPlot, TwoResultsFilesMakeAFigureInEveryFormat) {
  const auto sync = simulated("sync-sgd");
  const auto easgd = simulated("async-easgd");
  const auto stem = (dir_ / "efficiency").string();
  const auto outcome = dsgd({"plot", sync, easgd, "--x", "ranks", "--y", "efficiency", "--log-x", "--format",
                             "png,pdf,svg,tex", "--width", "two-columns", "--out", stem});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  for (const char* extension : {".png", ".pdf", ".svg", ".tex", ".dat", ".gp"}) {
    EXPECT_TRUE(fs::is_regular_file(stem + extension)) << extension;
    EXPECT_TRUE(contains(outcome.out, stem + extension)) << outcome.out;
  }
  // The legends are the algorithms, not run ids.
  const std::string tex = read_text_file(stem + ".tex");
  EXPECT_TRUE(contains(tex, "\\addlegendentry{sync-sgd}")) << tex;
  EXPECT_TRUE(contains(tex, "\\addlegendentry{async-easgd}")) << tex;
  EXPECT_FALSE(contains(tex, "simulate/")) << tex;
  EXPECT_TRUE(contains(read_text_file(stem + ".gp"), "title \"async-easgd\"")) << read_text_file(stem + ".gp");
}

TEST_F(AppPlot, RefusesWrongNamesAndOutputsItMayNotReplace) {
  const auto sync = simulated("sync-sgd");
  auto outcome = dsgd({"plot", sync, "--x", "ranks", "--y", "efficency", "--out", (dir_ / "f").string()});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "--y: unknown field 'efficency'; did you mean 'efficiency'?")) << outcome.err;
  outcome =
      dsgd({"plot", sync, "--x", "ranks", "--y", "efficiency", "--format", "jpg", "--out", (dir_ / "f").string()});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "unknown figure format 'jpg'")) << outcome.err;
  outcome =
      dsgd({"plot", sync, "--x", "ranks", "--y", "efficiency", "--style", "bars", "--out", (dir_ / "f").string()});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "use lines, points or linespoints")) << outcome.err;
  outcome = dsgd({"plot", (dir_ / "missing.json").string(), "--y", "efficiency", "--out", (dir_ / "f").string()});
  EXPECT_EQ(outcome.code, kExitUsage);
  // A folder where the PNG would go is never replaced, and nothing else is written.
  fs::create_directories(dir_ / "g.png");
  outcome = dsgd({"plot", sync, "--x", "ranks", "--y", "efficiency", "--out", (dir_ / "g").string()});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "g.png")) << outcome.err;
  EXPECT_TRUE(fs::is_directory(dir_ / "g.png"));
  EXPECT_FALSE(fs::exists(dir_ / "g.dat"));
  EXPECT_FALSE(fs::exists(dir_ / "f.dat"));
}

}  // namespace
}  // namespace dsgd::app
