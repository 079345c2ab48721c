#pragma once
// Figures through gnuplot: the data go to a plain data file (<stem>.dat, gnuplot's format, one index per series),
// a script (<stem>.gp) plots that file, and gnuplot renders <stem>.png (pngcairo), <stem>.pdf (pdfcairo) and
// <stem>.svg as asked. The data file and the script stay beside the images so a reader can restyle a figure without
// rerunning anything. For papers, <stem>.tex is the same figure as a pgfplots axis, data inline (docs/plot.md).

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::reports {

enum class PlotStyle { kLines, kPoints, kLinesPoints, kBars, kStacked };

struct Series {
  std::string title;
  std::vector<std::pair<double, double>> points;
  // "#rrggbb"; empty: the palette's colour of the series' position. Series that belong together (one model's
  // predicted and published values) share a colour and differ in `variant`: 0 is a solid line with a filled shape,
  // 1, 2, ... dashed lines with open shapes.
  std::string colour{};  // (initialised, so that {title, points} stays a complete aggregate initialiser)
  std::size_t variant = 0;
};

// kStacked: one segment kind of the stacked bars, e.g. one time-breakdown category.
struct Segment {
  std::string title;   // the legend's name for it
  std::string colour;  // "#rrggbb", or empty for the palette's colour of its position
};

// kStacked: one bar, a stack of Figure::segments from the bottom up. Bars of one `group` stand side by side
// above the group's name; `label` (may be empty) names the bar within its group, under the bar.
struct StackedBar {
  std::string group;
  std::string label;
  std::vector<double> values;  // one per Figure::segments entry, >= 0; 0: the segment is absent from this bar
};

struct Figure {
  std::string title;
  std::string x_label;
  std::string y_label;
  PlotStyle style = PlotStyle::kLinesPoints;
  bool log_x = false;
  bool log_y = false;
  std::vector<Series> series;                        // lines and points
  std::vector<std::pair<std::string, double>> bars;  // kBars: (category label, value)
  std::vector<Segment> segments;                     // kStacked
  std::vector<StackedBar> stacked;                   // kStacked, in drawing order (groups contiguous)
  // Sentences printed under the figure in the report: what was left out and why. The images do not carry them.
  std::vector<std::string> notes;
};

// The palette's colour number `index` (cycling), "#rrggbb": colours that tell series apart for colour-blind readers.
std::string palette_colour(std::size_t index);

// Parses "lines", "points", "linespoints", "bars" or "stacked"; throws UnknownNameError listing them.
PlotStyle plot_style_from_string(const std::string& name);
// The style names, in the order of PlotStyle.
const std::vector<std::string>& plot_style_names();

// Whether the figure has anything to draw: a bar, a stacked segment above 0, or a series with a point.
bool has_data(const Figure& figure);

enum class ImageFormat { kPng, kPdf, kSvg, kPgfplots };
// Parses "png", "pdf", "svg" or "tex" (pgfplots); throws UnknownNameError listing them.
ImageFormat image_format_from_string(const std::string& name);
// The file name extension of a format, without the dot ("tex" for pgfplots).
std::string extension_of(ImageFormat format);
const std::vector<std::string>& image_format_names();

// The page a figure is sized for: the report's screen size (1000 x 620 px, a 6 in PDF), or a paper's column: one
// column 3.5 in wide, two columns 7 in wide (IEEE and ACM two-column layouts), with fonts that stay 7-8 pt there.
enum class FigureWidth { kReport, kOneColumn, kTwoColumns };
// Parses "report", "one-column" or "two-columns"; throws UnknownNameError listing them.
FigureWidth figure_width_from_string(const std::string& name);
const std::vector<std::string>& figure_width_names();

struct RenderOptions {
  std::vector<ImageFormat> formats{ImageFormat::kPng, ImageFormat::kPdf};
  FigureWidth width = FigureWidth::kReport;
};

// The files render_figure writes for `stem`: <stem>.dat, <stem>.gp and one per format, in that order.
std::vector<std::filesystem::path> figure_files(const std::filesystem::path& stem, const RenderOptions& options);

// Writes <stem>.dat and <stem>.gp and runs gnuplot (60 s limit) to make the images the options ask for, and
// <stem>.tex directly when pgfplots is asked. The images appear only when gnuplot succeeded (rendered under
// temporary names, then renamed). Throws UnavailableError when gnuplot is not installed, Error with gnuplot's first
// message line when it fails, InputError when a log axis meets a value <= 0, a stacked figure has a log y axis or a
// negative value, or a bar's values do not match the segments.
void render_figure(const Figure& figure, const std::filesystem::path& stem, const RenderOptions& options = {});

}  // namespace dsgd::reports
