// A figure as pgfplots code: the same series, colours, shapes and tics as the gnuplot images, so a paper can set it
// in its own fonts (docs/plot.md).
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "reports/figure_layout.hpp"
#include "reports/table.hpp"

namespace dsgd::reports::detail {

namespace {

// pgfplots' marks in the order of figure.cpp's gnuplot point types: filled for a series, open for its variants.
const std::vector<std::string> kFilledMarks = {"*", "square*", "diamond*", "triangle*", "pentagon*"};
const std::vector<std::string> kOpenMarks = {"o", "square", "diamond", "triangle", "pentagon"};
const std::vector<std::string> kDashes = {"solid", "dashed", "dotted", "dashdotted", "densely dashed"};

// A colour defined for the figure: "dsgd" and its position, from "#rrggbb".
std::string colour_definition(const std::string& name, const std::string& hex) {
  std::string upper = hex.size() == 7 ? hex.substr(1) : "000000";
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "\\definecolor{" + name + "}{HTML}{" + upper + "}\n";
}

std::string number_list(const std::vector<double>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + number(values[i]);
  return out;
}

std::string label_list(const std::vector<std::string>& labels) {
  std::string out;
  for (std::size_t i = 0; i < labels.size(); ++i) out += (i ? "," : "") + ("{" + latex_escaped(labels[i]) + "}");
  return out;
}

// Axis options for explicit tics on one axis: values and their labels.
std::string tics(const std::string& axis, const std::vector<double>& values, const std::vector<std::string>& labels) {
  return "  " + axis + "tick={" + number_list(values) + "}, " + axis + "ticklabels={" + label_list(labels) + "},\n";
}

std::string series_plots(const Figure& figure, std::ostringstream& colours) {
  std::ostringstream out;
  const auto plotted = plotted_series(figure);
  for (std::size_t s = 0; s < plotted.size(); ++s) {
    const Series& series = *plotted[s];
    const std::string colour = "dsgd" + std::to_string(s);
    colours << colour_definition(colour, series.colour.empty() ? palette_colour(s) : series.colour);
    const std::string mark = series.variant == 0 ? kFilledMarks[s % kFilledMarks.size()]
                                                 : kOpenMarks[(series.variant - 1) % kOpenMarks.size()];
    out << "\\addplot[color=" << colour << ", " << kDashes[series.variant % kDashes.size()] << ", thick, ";
    if (figure.style == PlotStyle::kLines) {
      out << "no markers";
    } else {
      out << "mark=" << mark << ", mark options={solid" << (series.variant ? ", fill=white" : "") << "}";
      if (figure.style == PlotStyle::kPoints) out << ", only marks";
    }
    out << "] coordinates {";
    for (const auto& [x, y] : series.points) out << " (" << number(x) << "," << number(y) << ")";
    out << " };\n\\addlegendentry{" << latex_escaped(series.title) << "}\n";
  }
  return out.str();
}

std::string bar_plots(const Figure& figure, std::string& axis, std::ostringstream& colours) {
  std::ostringstream out;
  std::vector<double> positions;
  std::vector<std::string> labels;
  colours << colour_definition("dsgdbar", "#3b6ea8");
  out << "\\addplot[ybar, fill=dsgdbar, draw=black] coordinates {";
  for (std::size_t b = 0; b < figure.bars.size(); ++b) {
    positions.push_back(static_cast<double>(b + 1));
    labels.push_back(figure.bars[b].first);
    out << " (" << b + 1 << "," << number(figure.bars[b].second) << ")";
  }
  out << " };\n";
  axis += "  bar width=0.7, xticklabel style={rotate=35, anchor=north east}, xmin=0.4, xmax=" +
          number(static_cast<double>(figure.bars.size()) + 0.6) + ",\n" + tics("x", positions, labels);
  if (!figure.log_y) axis += "  ymin=0,\n";
  return out.str();
}

std::string stacked_plots(const Figure& figure, std::string& axis, std::ostringstream& colours) {
  std::ostringstream out;
  const BarLayout layout = layout_bars(figure);
  const auto plotted = plotted_segments(figure);
  for (std::size_t i = 0; i < plotted.size(); ++i) {
    const auto& segment = figure.segments[plotted[i]];
    const std::string colour = "dsgd" + std::to_string(i);
    colours << colour_definition(colour, segment.colour.empty() ? palette_colour(plotted[i]) : segment.colour);
    out << "\\addplot[fill=" << colour << ", draw=black!75] coordinates {";
    for (std::size_t b = 0; b < figure.stacked.size(); ++b) {
      out << " (" << number(layout.x[b]) << "," << number(figure.stacked[b].values[plotted[i]]) << ")";
    }
    out << " };\n\\addlegendentry{" << latex_escaped(segment.title) << "}\n";
  }
  std::vector<double> positions;
  std::vector<std::string> labels;
  if (layout.labelled) {
    for (std::size_t b = 0; b < figure.stacked.size(); ++b) {
      positions.push_back(layout.x[b]);
      const auto& bar = figure.stacked[b];
      labels.push_back(bar.label.empty() ? bar.group : bar.group + " / " + bar.label);
    }
  } else {
    for (const auto& group : layout.groups) {
      positions.push_back(group.centre);
      labels.push_back(group.name);
    }
  }
  axis += "  ybar stacked, bar width=0.8, ymin=0, xticklabel style={rotate=35, anchor=north east}, xmin=" +
          number(layout.x.empty() ? 0 : layout.x.front() - 0.8) +
          ", xmax=" + number(layout.x.empty() ? 1 : layout.x.back() + 0.8) + ",\n" + tics("x", positions, labels);
  return out.str();
}

}  // namespace

std::string pgfplots_figure(const Figure& figure, FigureWidth width, const std::string& script_name) {
  const std::string page_width = width == FigureWidth::kOneColumn    ? "\\columnwidth"
                                 : width == FigureWidth::kTwoColumns ? "\\textwidth"
                                                                     : "\\linewidth";
  const std::string height = width == FigureWidth::kTwoColumns ? "0.43" : "0.74";
  std::string axis = "  width=" + page_width + ", height=" + height + page_width + ",\n  title={" +
                     latex_escaped(figure.title) + "}, xlabel={" + latex_escaped(figure.x_label) + "}, ylabel={" +
                     latex_escaped(figure.y_label) + "},\n  grid=major, tick label style={font=\\footnotesize}, " +
                     "label style={font=\\small}, title style={font=\\small, align=center, text width=" + page_width +
                     "},\n";
  // A one-column figure has no room for a legend beside the plot.
  axis += width == FigureWidth::kOneColumn || width == FigureWidth::kTwoColumns
              ? "  legend style={font=\\footnotesize, at={(0.5,-0.2)}, anchor=north, legend columns=2},\n"
              : "  legend pos=outer north east, legend style={font=\\footnotesize},\n";
  if (figure.log_x) axis += "  xmode=log, log ticks with fixed point,\n";
  if (figure.log_y) axis += "  ymode=log, log ticks with fixed point,\n";
  const auto x_tics = data_x_tics(figure);
  auto labelled = [](const std::vector<double>& values, auto&& label) {
    std::vector<std::string> labels;
    for (double value : values) labels.push_back(label(value));
    return labels;
  };
  auto log_tics_of = [&](bool y_axis) {
    const auto [low, high] = data_range(figure, y_axis);
    return log_axis_tics(low, high);
  };
  std::ostringstream colours;
  std::string plots;
  if (figure.style == PlotStyle::kBars) {
    plots = bar_plots(figure, axis, colours);
  } else if (figure.style == PlotStyle::kStacked) {
    plots = stacked_plots(figure, axis, colours);
  } else {
    plots = series_plots(figure, colours);
    if (!x_tics.empty()) {
      axis += tics("x", x_tics, labelled(x_tics, tic_label));
    } else if (figure.log_x) {
      const auto log_x = log_tics_of(false);
      if (!log_x.empty()) axis += tics("x", log_x, labelled(log_x, [](double v) { return significant(v); }));
    }
  }
  if (figure.log_y && figure.style != PlotStyle::kStacked) {
    const auto log_y = log_tics_of(true);
    if (!log_y.empty()) axis += tics("y", log_y, labelled(log_y, [](double v) { return significant(v); }));
  }
  std::ostringstream out;
  out << "% pgfplots figure written by dsgd, the data of " << script_name << " inline. In the preamble:\n"
      << "%   \\usepackage{pgfplots} \\pgfplotsset{compat=1.17}\n"
      << "% and \\input this file where the figure goes (inside a figure environment for a caption).\n"
      << colours.str() << "\\begin{tikzpicture}\n\\begin{axis}[\n"
      << axis << "]\n"
      << plots << "\\end{axis}\n\\end{tikzpicture}\n";
  return out.str();
}

}  // namespace dsgd::reports::detail
