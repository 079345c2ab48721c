#pragma once
// Figures through gnuplot: the data go to a plain data file (<stem>.dat, gnuplot's format, one index per series),
// a script (<stem>.gp) plots that file, and gnuplot renders <stem>.png (pngcairo) and <stem>.pdf (pdfcairo). The
// data file and the script stay beside the images so a reader can restyle a figure without rerunning anything.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::reports {

enum class PlotStyle { kLines, kPoints, kLinesPoints, kBars };

struct Series {
  std::string title;
  std::vector<std::pair<double, double>> points;
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
};

// Parses "lines", "points", "linespoints" or "bars"; throws UnknownNameError listing them.
PlotStyle plot_style_from_string(const std::string& name);

// Writes <stem>.dat and <stem>.gp and runs gnuplot (60 s limit) to make <stem>.png and <stem>.pdf. The images
// appear only when gnuplot succeeded (rendered under temporary names, then renamed). Throws UnavailableError when
// gnuplot is not installed, Error with gnuplot's first message line when it fails, InputError when a log axis
// meets a value <= 0.
void render_figure(const Figure& figure, const std::filesystem::path& stem);

}  // namespace dsgd::reports
