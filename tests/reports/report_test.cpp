#include "reports/report.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dsgd::reports
