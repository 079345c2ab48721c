#include "reports/figure.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/json.hpp"

namespace dsgd::reports {
namespace {

namespace fs = std::filesystem;

class ReportsFigure : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dsgd-figure-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

bool starts_with_bytes(const fs::path& path, std::string_view magic) {
  return read_text_file(path).substr(0, magic.size()) == magic;
}

// gnuplot is one of dsgd's dependencies (scripts/setup.sh installs gnuplot-nox), so this test requires it.
TEST_F(ReportsFigure, RendersPngAndPdfFromTheDataFile) {
  Figure figure;
  figure.title = "log10 error vs time";
  figure.x_label = "time (s)";
  figure.y_label = "error";
  figure.log_y = true;
  figure.series = {{"sync \"easgd\"", {{1, 0.5}, {2, 0.2}, {4, 0.05}}}, {"async_sgd", {{1, 0.6}, {3, 0.3}}}};
  render_figure(figure, dir_ / "err");
  EXPECT_TRUE(starts_with_bytes(dir_ / "err.png", "\x89PNG"));
  EXPECT_TRUE(starts_with_bytes(dir_ / "err.pdf", "%PDF"));
  const std::string data = read_text_file(dir_ / "err.dat");
  EXPECT_NE(data.find("4 0.050000000000000003"), std::string::npos) << data;
  EXPECT_NE(read_text_file(dir_ / "err.gp").find("index 1"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "err.tmp.png"));
}

TEST_F(ReportsFigure, AnEmptySeriesShiftsNoOtherSeriesTitle) {
  // A run that diverged before its first evaluation has an empty curve: the lines after it keep their titles.
  Figure figure;
  figure.title = "error";
  figure.series = {{"first", {{1, 0.5}}}, {"diverged", {}}, {"third", {{1, 0.3}, {2, 0.2}}}};
  render_figure(figure, dir_ / "gap");
  const std::string script = read_text_file(dir_ / "gap.gp");
  EXPECT_NE(script.find("index 1 using 1:2 with linespoints linewidth 2 title \"third\""), std::string::npos) << script;
  EXPECT_EQ(script.find("diverged"), std::string::npos) << script;
  EXPECT_EQ(script.find("index 2"), std::string::npos) << script;
  figure.series = {{"diverged", {}}};
  EXPECT_THROW(render_figure(figure, dir_ / "none"), InputError);
}

TEST_F(ReportsFigure, RendersBars) {
  Figure figure;
  figure.title = "bars";
  figure.style = PlotStyle::kBars;
  figure.log_y = true;
  figure.bars = {{"lenet", 5.4}, {"resnet50", 320.0}};
  render_figure(figure, dir_ / "bars");
  EXPECT_TRUE(starts_with_bytes(dir_ / "bars.png", "\x89PNG"));
}

TEST_F(ReportsFigure, RejectsNonPositiveValuesOnALogAxis) {
  Figure figure;
  figure.title = "t";
  figure.log_y = true;
  figure.series = {{"s", {{1, 0.0}}}};
  EXPECT_THROW(render_figure(figure, dir_ / "bad"), InputError);
  EXPECT_FALSE(fs::exists(dir_ / "bad.png"));
}

TEST_F(ReportsFigure, UnknownStyleListsTheValidOnes) {
  try {
    plot_style_from_string("pie");
    FAIL();
  } catch (const UnknownNameError& e) {
    EXPECT_NE(std::string(e.what()).find("lines, points, linespoints, bars"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dsgd::reports
