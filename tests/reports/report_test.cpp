#include "reports/report.hpp"

#include <gtest/gtest.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::reports {
namespace {

namespace fs = std::filesystem;

class ReportsReport : public testing::ScratchDirTest {
 protected:
  // One experiment whose results are `entries`, with one figure of lost % against threads on a log axis.
  Manifest lost_updates_manifest() const {
    return parse_manifest(parse_json(R"json({"name": "t", "title": "T", "experiments": [
        {"id": "lost", "title": "Lost", "description": "", "command": ["lost-updates", "--results", "{results}"],
         "figures": [{"id": "f", "title": "Lost additions", "x_label": "threads", "y_label": "lost %",
                      "style": "linespoints", "log_y": true, "x": "ranks", "y": "counter:lost_percent",
                      "notes": ["A note of the manifest."]}]}]})json",
                                     "inline"),
                          "inline");
  }
  void write_lost(const std::vector<std::pair<std::int64_t, double>>& rows) const {
    Results results;
    for (const auto& [threads, lost] : rows) {
      Entry e;
      e.name = "lost/" + std::to_string(threads);
      e.ranks = threads;
      e.counters["lost_percent"] = lost;
      results.benchmarks.push_back(e);
    }
    write_results(dir_ / "results" / "lost.json", results);
  }
};

TEST_F(ReportsReport, PrintsTheFiguresNotesUnderIt) {
  write_lost({{1, 0.0}, {2, 0.02}});
  render_report(lost_updates_manifest(), dir_ / "results", dir_ / "out");
  const std::string index = read_text_file(dir_ / "out" / "index.md");
  EXPECT_NE(index.find("![Lost additions](figures/lost-f.png)\n\nA note of the manifest.\n\nNot drawn: 1 point with a "
                       "value of 0 or less"),
            std::string::npos)
      << index;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "figures" / "lost-f.png"));
}

TEST_F(ReportsReport, AFigureWithNothingToDrawIsReportedNotFatal) {
  // One thread on a one-core machine loses nothing: the log axis has no point, and the report still renders.
  write_lost({{1, 0.0}});
  render_report(lost_updates_manifest(), dir_ / "results", dir_ / "out");
  const std::string index = read_text_file(dir_ / "out" / "index.md");
  EXPECT_NE(index.find("Figure not drawn, as these results give it no point: Lost additions."), std::string::npos)
      << index;
  EXPECT_EQ(index.find("figures/lost-f.png"), std::string::npos) << index;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "figures" / "lost-f.png"));
}

// Two experiments, of which `dsgd reproduce` ran one (its timings file says so): the report times it, gives the
// commands that rerun it, and names the other as not run.
TEST_F(ReportsReport, TimingsGiveEachExperimentItsWallTimeAndCommands) {
  write_lost({{1, 0.0}, {2, 0.02}});
  Manifest manifest = lost_updates_manifest();
  manifest.experiments.push_back(manifest.experiments[0]);
  manifest.experiments.back().id = "lost-hot";
  write_timings(dir_ / "results" / "timings.json",
                {{"lost", 83.4, "dsgd lost-updates --results out/results/lost.json", "dsgd reproduce --only lost"}});
  render_report(manifest, dir_ / "results", dir_ / "out");
  const std::string index = read_text_file(dir_ / "out" / "index.md");
  EXPECT_NE(index.find("Not run in this report (1 of 2 experiments): lost-hot. `dsgd reproduce --all` runs every "
                       "experiment."),
            std::string::npos)
      << index;
  EXPECT_NE(index.find("| experiment | wall time | command |"), std::string::npos) << index;
  EXPECT_NE(index.find("| lost | 1 min 23 s | `dsgd reproduce --only lost` |"), std::string::npos) << index;
  EXPECT_NE(index.find("| total | 1 min 23 s | |"), std::string::npos) << index;
  EXPECT_NE(index.find(" in 1 min 23 s of wall time; `dsgd reproduce --only lost` reruns it alone."), std::string::npos)
      << index;
  EXPECT_LT(index.find("| lost | 1 min 23 s"), index.find("## Lost")) << "the summary comes before the sections";
  EXPECT_EQ(index.find("lost-hot |"), std::string::npos) << "no row for what did not run: " << index;
}

// Results written by hand (or before timings existed) still render: every experiment, wall times not recorded.
TEST_F(ReportsReport, ResultsWithoutTimingsRenderEveryExperiment) {
  write_lost({{1, 0.0}, {2, 0.02}});
  render_report(lost_updates_manifest(), dir_ / "results", dir_ / "out");
  const std::string index = read_text_file(dir_ / "out" / "index.md");
  EXPECT_NE(index.find("| lost | — | `dsgd reproduce --only lost` |"), std::string::npos) << index;
  EXPECT_NE(index.find("Wall times: not recorded"), std::string::npos) << index;
  EXPECT_EQ(index.find("Not run in this report"), std::string::npos) << index;
}

TEST_F(ReportsReport, ATimingsFileNamingAnUnknownExperimentIsAnInputError) {
  write_lost({{1, 0.0}});
  write_timings(dir_ / "results" / "timings.json", {{"lots", 1.0, "dsgd x", "dsgd reproduce --only lots"}});
  try {
    render_report(lost_updates_manifest(), dir_ / "results", dir_ / "out");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("timings.json: experiment 'lots' is not in manifest 't'"), std::string::npos)
        << e.what();
  }
  write_file_atomically(dir_ / "results" / "timings.json", R"({"experiments": [{"id": "lost", "wall_s": -2,
      "command": "dsgd x", "reproduce": "dsgd reproduce --only lost"}]})");
  EXPECT_THROW(render_report(lost_updates_manifest(), dir_ / "results", dir_ / "out"), InputError);
}

TEST_F(ReportsReport, TimingsRoundTripAndDurationsReadAsPeopleSayThem) {
  const std::vector<ExperimentTiming> timings = {
      {"a", 0.4, "dsgd models --results r/a.json", "dsgd reproduce --only a"},
      {"b", 725, "dsgd platforms --results r/b.json", "dsgd reproduce --only b"}};
  write_timings(dir_ / "timings.json", timings);
  const auto read = read_timings(dir_ / "timings.json");
  ASSERT_EQ(read.size(), 2U);
  EXPECT_EQ(read[1].id, "b");
  EXPECT_EQ(read[1].wall_s, 725);
  EXPECT_EQ(read[1].command, "dsgd platforms --results r/b.json");
  EXPECT_EQ(read[1].reproduce, "dsgd reproduce --only b");
  EXPECT_EQ(duration_text(0.4), "0.4 s");
  EXPECT_EQ(duration_text(42.4), "42 s");
  EXPECT_EQ(duration_text(425), "7 min 05 s");
  EXPECT_EQ(duration_text(6745), "1 h 52 min");
}

}  // namespace
}  // namespace dsgd::reports
