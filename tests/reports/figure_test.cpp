#include "reports/figure.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/json.hpp"
#include "reports/figure_layout.hpp"

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
  const auto index1 = script.find("index 1 using 1:2 with linespoints");
  ASSERT_NE(index1, std::string::npos) << script;
  EXPECT_NE(script.substr(index1, script.find('\n', index1) - index1).find("title \"third\""), std::string::npos)
      << script;
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

// The line of `text` that contains `needle` ("" if none).
std::string line_with(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return "";
  const auto start = text.rfind('\n', at);
  const auto begin = start == std::string::npos ? 0 : start + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

TEST_F(ReportsFigure, StacksSegmentsFromTheBottomAndNamesBarsAndGroups) {
  Figure figure;
  figure.title = "breakdown";
  figure.style = PlotStyle::kStacked;
  figure.segments = {{"comm", "#d55e00"}, {"never present", ""}, {"compute", ""}};
  figure.stacked = {{"sync", "measured", {2, 0, 3}},
                    {"sync", "predicted", {1, 0, 4}},
                    {"async", "measured", {5, 0, 0}},
                    {"async", "published", {0, 0, 6}}};
  render_figure(figure, dir_ / "stack");
  EXPECT_TRUE(starts_with_bytes(dir_ / "stack.png", "\x89PNG"));
  const std::string data = read_text_file(dir_ / "stack.dat");
  // Bars one unit apart, the second group after a gap; a segment starts where the one below it ends; the segment no
  // bar has gets no block (it would shift gnuplot's indices).
  EXPECT_NE(data.find("1 1 0.59999999999999998 1.3999999999999999 0 2 \"sync / measured\""), std::string::npos) << data;
  EXPECT_NE(data.find("1 3.5 0.59999999999999998 1.3999999999999999 2 5 \"sync / measured\""), std::string::npos)
      << data;
  EXPECT_NE(data.find("3.6000000000000001 2.5 "), std::string::npos) << data;
  EXPECT_EQ(data.find("never present"), std::string::npos) << data;
  const std::string script = read_text_file(dir_ / "stack.gp");
  EXPECT_NE(line_with(script, "index 0 using 1:2:3:4:5:6 with boxxyerror").find("\"#d55e00\" title \"comm\""),
            std::string::npos)
      << script;
  EXPECT_NE(line_with(script, "index 1 using").find("title \"compute\""), std::string::npos) << script;
  EXPECT_EQ(script.find("index 2"), std::string::npos) << script;
  EXPECT_NE(script.find("set xtics (\"measured\" 1, \"predicted\" 2, \"measured\" 3.6000000000000001, \"published\" "
                        "4.5999999999999996)"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("set x2tics (\"sync\" 1.5, \"async\" 4.0999999999999996)"), std::string::npos) << script;
  EXPECT_EQ(script.find("with labels"), std::string::npos) << "totals of several segments are not written";
}

TEST_F(ReportsFigure, GroupedBarsOfOneSegmentCarryTheirValues) {
  // A bar of 0 must read as 0, not as missing; one of 7 beside 1023 must be readable at all.
  Figure figure;
  figure.title = "staleness";
  figure.style = PlotStyle::kStacked;
  figure.segments = {{"bound", ""}, {"measured", ""}};
  figure.stacked = {
      {"hogwild", "", {7, 0}}, {"hogwild", "", {0, 0}}, {"hogbatch", "", {1023, 0}}, {"hogbatch", "", {0, 573.36}}};
  render_figure(figure, dir_ / "grouped");
  const std::string data = read_text_file(dir_ / "grouped.dat");
  EXPECT_NE(data.find("# values: x top text\n1 7 \"7\"\n2 0 \"0\"\n"), std::string::npos) << data;
  EXPECT_NE(data.find("\"573.4\""), std::string::npos) << data;
  const std::string script = read_text_file(dir_ / "grouped.gp");
  EXPECT_NE(script.find("index 2 using 1:2:3 with labels"), std::string::npos) << script;
  EXPECT_NE(script.find("set xtics (\"hogwild\" 1.5, \"hogbatch\" 4.0999999999999996) rotate by -35"),
            std::string::npos)
      << script;
  EXPECT_EQ(script.find("x2tics"), std::string::npos) << "bars without labels of their own need no second axis";
}

TEST_F(ReportsFigure, RejectsStackedBarsItCannotDraw) {
  Figure figure;
  figure.title = "t";
  figure.style = PlotStyle::kStacked;
  figure.segments = {{"a", ""}};
  figure.stacked = {{"g", "", {-1}}};
  EXPECT_THROW(render_figure(figure, dir_ / "negative"), InputError);
  figure.stacked = {{"g", "", {1, 2}}};
  EXPECT_THROW(render_figure(figure, dir_ / "mismatch"), InputError);
  figure.stacked = {{"g", "", {1}}};
  figure.log_y = true;
  EXPECT_THROW(render_figure(figure, dir_ / "log"), InputError);
  figure.log_y = false;
  figure.stacked = {{"g", "", {0}}};
  EXPECT_FALSE(has_data(figure));
  EXPECT_THROW(render_figure(figure, dir_ / "empty"), InputError);
  EXPECT_FALSE(fs::exists(dir_ / "negative.png"));
}

TEST_F(ReportsFigure, SeriesOfOneColourDifferInDash) {
  Figure figure;
  figure.title = "efficiency";
  figure.log_x = true;
  figure.series = {{"GoogLeNet, predicted", {{68, 1}, {136, 0.96}}, "#0072b2", 0},
                   {"GoogLeNet, published", {{68, 1}, {136, 0.95}}, "#0072b2", 1},
                   {"lone", {{4352, 0.9}}}};
  render_figure(figure, dir_ / "dash");
  const std::string script = read_text_file(dir_ / "dash.gp");
  EXPECT_NE(line_with(script, "title \"GoogLeNet, predicted\"").find("\"#0072b2\" dashtype 1 pointtype 7"),
            std::string::npos)
      << script;
  EXPECT_NE(line_with(script, "title \"GoogLeNet, published\"").find("\"#0072b2\" dashtype 2 pointtype 6"),
            std::string::npos)
      << script;
  // Unset: the palette's colour of the series' position.
  EXPECT_NE(line_with(script, "title \"lone\"").find(palette_colour(2)), std::string::npos) << script;
  // A log axis of few values is labelled at the values themselves, not at powers of ten.
  EXPECT_NE(script.find("set xtics (\"68\" 68, \"136\" 136, \"4352\" 4352)"), std::string::npos) << script;
}

// Message sizes on a log axis: tics closer than a twelfth of the axis's decades are dropped (the last kept), and
// large whole numbers are shortened: 4 MiB reads 4M, 100,000 floats 100k.
TEST_F(ReportsFigure, ALogAxisOfManySizesKeepsItsTicsApart) {
  Figure figure;
  figure.title = "bandwidth";
  figure.log_x = true;
  figure.series = {{"memcpy", {{1, 1}, {4, 2}, {524288, 3}, {1048576, 4}, {2097152, 5}, {4194304, 6}}},
                   {"floats", {{100000, 1}, {3097600, 2}}}};
  render_figure(figure, dir_ / "sizes");
  const std::string script = read_text_file(dir_ / "sizes.gp");
  EXPECT_NE(
      script.find("set xtics (\"1\" 1, \"4\" 4, \"100k\" 100000, \"512K\" 524288, \"2M\" 2097152, \"4M\" 4194304)"),
      std::string::npos)
      << script;
}

TEST_F(ReportsFigure, ALogAxisWithinTwoDecadesLabelsItsMinorTics) {
  Figure figure;
  figure.title = "error";
  figure.log_y = true;
  figure.series = {{"s", {{1, 0.19}, {2, 0.51}}}};
  render_figure(figure, dir_ / "minor");
  EXPECT_NE(read_text_file(dir_ / "minor.gp").find("set ytics (\"0.2\" 0.2"), std::string::npos);
  EXPECT_NE(read_text_file(dir_ / "minor.gp").find("\"0.5\" 0.5)"), std::string::npos);
  EXPECT_EQ(detail::log_axis_tics(0.19, 0.51), (std::vector<double>{0.2, 0.3, 0.4, 0.5}));
  EXPECT_EQ(detail::log_axis_tics(0.08, 1.0), (std::vector<double>{0.1, 0.2, 0.5, 1}));
  EXPECT_EQ(detail::log_axis_tics(0.64, 0.84), (std::vector<double>{0.65, 0.7, 0.75, 0.8, 0.85}));
  // Two decades and more: the powers of ten label the axis.
  EXPECT_TRUE(detail::log_axis_tics(0.001, 0.5).empty());
}

TEST_F(ReportsFigure, RendersSvgAndPgfplotsAtAColumnsWidth) {
  Figure figure;
  figure.title = "accuracy_by time";
  figure.x_label = "time (s)";
  figure.log_x = true;
  figure.series = {{"sync-sgd, 50% & more", {{1, 0.5}, {2, 0.8}}}, {"published", {{1, 0.6}}, "#0072b2", 1}};
  RenderOptions options;
  options.formats = {ImageFormat::kSvg, ImageFormat::kPgfplots, ImageFormat::kPng};
  options.width = FigureWidth::kOneColumn;
  render_figure(figure, dir_ / "paper", options);
  const std::string svg = read_text_file(dir_ / "paper.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("width=\"252\""), std::string::npos) << "3.5 in at 72 points an inch";
  EXPECT_TRUE(starts_with_bytes(dir_ / "paper.png", "\x89PNG"));
  EXPECT_FALSE(fs::exists(dir_ / "paper.pdf"));
  const std::string tex = read_text_file(dir_ / "paper.tex");
  EXPECT_NE(tex.find("\\begin{axis}"), std::string::npos) << tex;
  EXPECT_NE(tex.find("width=\\columnwidth"), std::string::npos) << tex;
  EXPECT_NE(tex.find("xmode=log"), std::string::npos) << tex;
  EXPECT_NE(tex.find("title={accuracy\\_by time}"), std::string::npos) << tex;
  EXPECT_NE(tex.find("\\addlegendentry{sync-sgd, 50\\% \\& more}"), std::string::npos) << tex;
  EXPECT_NE(tex.find("coordinates { (1,0.5) (2,0.80000000000000004) }"), std::string::npos) << tex;
  // The variant of a colour: dashed with an open mark, as in the gnuplot images.
  EXPECT_NE(line_with(tex, "coordinates { (1,0.59999999999999998) }").find("dashed, thick, mark=o"), std::string::npos)
      << tex;
  EXPECT_EQ(figure_files(dir_ / "paper", options).back(), dir_ / "paper.png");
  EXPECT_THROW(image_format_from_string("jpeg"), UnknownNameError);
  EXPECT_EQ(image_format_from_string("pgfplots"), ImageFormat::kPgfplots);
  EXPECT_THROW(figure_width_from_string("one-col"), UnknownNameError);
}

TEST_F(ReportsFigure, WrapsALongTitle) {
  Figure figure;
  figure.title = std::string(60, 'a') + " " + std::string(60, 'b');
  figure.series = {{"s", {{1, 1}}}};
  render_figure(figure, dir_ / "long");
  EXPECT_NE(read_text_file(dir_ / "long.gp").find(std::string(60, 'a') + "\\n" + std::string(60, 'b')),
            std::string::npos);
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
    EXPECT_NE(std::string(e.what()).find("lines, points, linespoints, bars, stacked"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dsgd::reports
