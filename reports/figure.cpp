#include "reports/figure.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/subprocess.hpp"
#include "reports/figure_layout.hpp"

namespace dsgd::reports {

namespace {

using detail::number;

const std::vector<std::string> kStyleNames = {"lines", "points", "linespoints", "bars", "stacked"};
const std::vector<std::string> kFormatNames = {"png", "pdf", "svg", "tex"};
const std::vector<std::string> kWidthNames = {"report", "one-column", "two-columns"};

// Colour-blind-safe colours (Okabe and Ito), yellow last as it is faint on white.
const std::vector<std::string> kPalette = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                           "#cc79a7", "#56b4e9", "#000000", "#f0e442"};
// Filled shapes tell series apart besides their colours; a variant of a colour (published beside predicted) is
// drawn dashed with an open shape.
const std::vector<int> kFilledPoints = {7, 5, 9, 11, 13};
const std::vector<int> kOpenPoints = {6, 4, 8, 10, 12};
// Characters of a title line, and of the longest legend entry that still goes beside the plot (1000 px, 11 pt).
constexpr std::size_t kTitleWidth = 95;
constexpr std::size_t kMaxSideKey = 30;

// gnuplot strings in double quotes: escape backslash and quote.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A long title in lines of at most `width` characters, broken at spaces, as one gnuplot string ("\n" escapes).
std::string wrapped(const std::string& text, std::size_t width) {
  std::vector<std::string> lines{""};
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width) lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + word;
  }
  std::string out;
  for (const auto& line : lines) {
    const std::string one = quoted(line);
    out += out.empty() ? one.substr(0, one.size() - 1) : "\\n" + one.substr(1, one.size() - 2);
  }
  return out + "\"";
}

void check_values(const Figure& figure, const std::filesystem::path& stem) {
  const std::string where = stem.string() + ": figure '" + figure.title + "' ";
  auto bad = [&](const char* axis, double value) {
    throw InputError(where + "has a log " + axis + " axis but a value " + number(value) + " <= 0");
  };
  for (const auto& [label, value] : figure.bars) {
    if (figure.log_y && !(value > 0)) bad("y", value);
  }
  for (const auto& series : figure.series) {
    for (const auto& [x, y] : series.points) {
      if (figure.log_x && !(x > 0)) bad("x", x);
      if (figure.log_y && !(y > 0)) bad("y", y);
    }
  }
  if (figure.style != PlotStyle::kStacked) return;
  // Stacks start at 0, which a log axis cannot show, and a negative segment would overlap the one below it.
  if (figure.log_y) throw InputError(where + "stacks bars from 0, so its y axis cannot be logarithmic");
  for (const auto& bar : figure.stacked) {
    if (bar.values.size() != figure.segments.size()) {
      throw InputError(where + "has a bar with " + std::to_string(bar.values.size()) + " values for " +
                       std::to_string(figure.segments.size()) + " segments");
    }
    for (double value : bar.values) {
      if (!(value >= 0) || !std::isfinite(value)) {
        throw InputError(where + "stacks a value " + number(value) + " in bar '" + bar.group + " " + bar.label +
                         "'; stacked values must be finite and >= 0");
      }
    }
  }
}

std::string data_file(const Figure& figure) {
  std::ostringstream out;
  out << "# " << figure.title << '\n';
  if (figure.style == PlotStyle::kBars) {
    out << "# label value\n";
    for (const auto& [label, value] : figure.bars) out << quoted(label) << ' ' << number(value) << '\n';
    return out.str();
  }
  if (figure.style == PlotStyle::kStacked) {
    // One block per segment; each row one bar's piece of it, as a box from (xlow, ylow) to (xhigh, yhigh).
    const detail::BarLayout layout = detail::layout_bars(figure);
    const auto plotted = detail::plotted_segments(figure);
    for (std::size_t i = 0; i < plotted.size(); ++i) {
      const std::size_t s = plotted[i];
      if (i) out << "\n\n";
      out << "# segment " << i << ": " << figure.segments[s].title << "\n# x y xlow xhigh ylow yhigh bar\n";
      for (std::size_t b = 0; b < figure.stacked.size(); ++b) {
        const auto& bar = figure.stacked[b];
        if (!(bar.values[s] > 0)) continue;
        double bottom = 0;
        for (std::size_t below = 0; below < s; ++below) bottom += bar.values[below];
        const double top = bottom + bar.values[s];
        out << number(layout.x[b]) << ' ' << number((bottom + top) / 2) << ' ' << number(layout.x[b] - 0.4) << ' '
            << number(layout.x[b] + 0.4) << ' ' << number(bottom) << ' ' << number(top) << ' '
            << quoted(bar.label.empty() ? bar.group : bar.group + " / " + bar.label) << '\n';
      }
    }
    if (detail::labels_values(figure)) {
      out << "\n\n# values: x top text\n";
      for (std::size_t b = 0; b < figure.stacked.size(); ++b) {
        double top = 0;
        for (double value : figure.stacked[b].values) top += value;
        out << number(layout.x[b]) << ' ' << number(top) << ' ' << quoted(significant(top, 4)) << '\n';
      }
    }
    return out.str();
  }
  const auto plotted = detail::plotted_series(figure);
  for (std::size_t s = 0; s < plotted.size(); ++s) {
    if (s) out << "\n\n";  // two blank lines: the next gnuplot index
    out << "# series " << s << ": " << plotted[s]->title << "\n# x y\n";
    for (const auto& [x, y] : plotted[s]->points) out << number(x) << ' ' << number(y) << '\n';
  }
  return out.str();
}

// "set xtics (...)" and the x range at detail::data_x_tics, or "" where the data have none.
std::string data_tics(const Figure& figure) {
  const auto tics = detail::data_x_tics(figure);
  if (tics.empty()) return "";
  std::string out = "set xtics (";
  for (std::size_t i = 0; i < tics.size(); ++i) {
    out += (i ? ", " : "") + quoted(detail::tic_label(tics[i])) + " " + number(tics[i]);
  }
  // A little room beside the first and last tics rather than gnuplot's extension to the next round number.
  const auto [low, high] = detail::data_range(figure, false);
  const double pad = high > low ? (high - low) * 0.05 : 0.5;
  const std::string range =
      figure.log_x ? number(low / 1.25) + ":" + number(high * 1.25) : number(low - pad) + ":" + number(high + pad);
  return out + ")\nset xrange [" + range + "]\n";
}

std::string stacked_commands(const Figure& figure, const std::string& data_name) {
  std::ostringstream out;
  const detail::BarLayout layout = detail::layout_bars(figure);
  const bool values = detail::labels_values(figure);
  double highest = 0;
  for (const auto& bar : figure.stacked) {
    double top = 0;
    for (double value : bar.values) top += value;
    highest = std::max(highest, top);
  }
  // Room above the highest bar for its value, written upwards.
  out << "set style fill solid 0.85 border rgb '#404040'\nset grid noxtics\n"
      << (values && highest > 0 ? "set yrange [0:" + number(highest * 1.15) + "]\n" : "set yrange [0:*]\n");
  out << "set xrange [" << number(layout.x.empty() ? 0 : layout.x.front() - 0.8) << ":"
      << number(layout.x.empty() ? 1 : layout.x.back() + 0.8) << "]\n";
  std::ostringstream groups;
  for (std::size_t g = 0; g < layout.groups.size(); ++g) {
    groups << (g ? ", " : "") << quoted(layout.groups[g].name) << ' ' << number(layout.groups[g].centre);
  }
  if (layout.labelled) {
    // Each bar's label under it, written upwards, and the groups' names along the top, where gnuplot makes room
    // for both (labels placed by hand under the bar labels would need their length guessed).
    out << "set xtics (";
    for (std::size_t b = 0; b < figure.stacked.size(); ++b) {
      out << (b ? ", " : "") << quoted(figure.stacked[b].label) << ' ' << number(layout.x[b]);
    }
    out << ") rotate by 90 right scale 0 noenhanced\n";
    out << "set link x2\nset x2tics (" << groups.str() << ") scale 0 noenhanced\n";
    out << "set x2label " << quoted(figure.x_label) << " noenhanced\nunset xlabel\n";
  } else {
    out << "set xtics (" << groups.str() << ") rotate by -35 scale 0 noenhanced\n";
  }
  out << "plot ";
  const auto plotted = detail::plotted_segments(figure);
  for (std::size_t i = 0; i < plotted.size(); ++i) {
    const auto& segment = figure.segments[plotted[i]];
    const std::string colour = segment.colour.empty() ? palette_colour(plotted[i]) : segment.colour;
    if (i) out << ", \\\n     ";
    out << quoted(data_name) << " index " << i << " using 1:2:3:4:5:6 with boxxyerror linecolor rgb " << quoted(colour)
        << " title " << quoted(segment.title);
  }
  if (values) {
    out << ", \\\n     " << quoted(data_name) << " index " << plotted.size()
        << " using 1:2:3 with labels rotate by 90 left offset 0,0.4 font ',9' notitle";
  }
  out << '\n';
  return out.str();
}

// "set ytics (...)" and the range for a log axis whose data span less than a decade (detail::log_axis_tics), "" for
// any other axis.
std::string log_tics(const Figure& figure, bool y_axis) {
  if (!(y_axis ? figure.log_y : figure.log_x)) return "";
  const auto [low, high] = detail::data_range(figure, y_axis);
  const auto tics = detail::log_axis_tics(low, high);
  if (tics.empty()) return "";
  const std::string axis = y_axis ? "y" : "x";
  std::string out = "set " + axis + "tics (";
  for (std::size_t i = 0; i < tics.size(); ++i)
    out += (i ? ", " : "") + quoted(significant(tics[i])) + " " + number(tics[i]);
  const double lowest = std::min(low, tics.front());
  const double highest = std::max(high, tics.back());
  // Room of 6% of the axis's span beside the outer points, so none sits on the border.
  const double pad = std::max(1.02, std::pow(highest / lowest, 0.06));
  return out + ")\nset " + axis + "range [" + number(lowest / pad) + ":" + number(highest * pad) + "]\n";
}

// The plot commands, shared by every terminal. A one-column figure has no room for a legend beside the plot.
std::string plot_commands(const Figure& figure, const std::string& data_name, FigureWidth width) {
  std::ostringstream out;
  // A one-column figure's title line holds about 45 characters of 7 pt, a two-column one's about 95 of 8 pt.
  const std::size_t title_width = width == FigureWidth::kOneColumn    ? 45
                                  : width == FigureWidth::kTwoColumns ? 95
                                                                      : kTitleWidth;
  out << "set title " << wrapped(figure.title, title_width) << " noenhanced\n";
  out << "set xlabel " << quoted(figure.x_label) << " noenhanced\n";
  out << "set ylabel " << quoted(figure.y_label) << " noenhanced\n";
  // Long legend entries beside the plot would squeeze it: they go under it instead.
  std::size_t longest_key = 0;
  for (const auto& series : figure.series) longest_key = std::max(longest_key, series.title.size());
  for (const auto& segment : figure.segments) longest_key = std::max(longest_key, segment.title.size());
  const bool below = longest_key > kMaxSideKey || width == FigureWidth::kOneColumn;
  out << "set grid\nset key " << (below ? "below" : "outside right top") << " noenhanced\n";
  // %g: gnuplot's default writes small powers of ten with six decimals (0.000010).
  if (figure.log_x) out << "set logscale x\nset format x '%g'\n";
  if (figure.log_y) out << "set logscale y\nset format y '%g'\n";
  if (figure.style == PlotStyle::kBars) {
    out << log_tics(figure, true);
    out << "set style data histogram\nset style fill solid 0.8 border -1\nset boxwidth 0.8\n"
        << "set xtics rotate by -35 noenhanced\nunset key\n";
    if (!figure.log_y) out << "set yrange [0:*]\n";
    out << "plot " << quoted(data_name) << " using 2:xtic(1) with boxes linecolor rgb '#3b6ea8'\n";
    return out.str();
  }
  if (figure.style == PlotStyle::kStacked) return out.str() + stacked_commands(figure, data_name);
  const std::string x_tics = data_tics(figure);
  out << (x_tics.empty() ? log_tics(figure, false) : x_tics) << log_tics(figure, true);
  const char* with = figure.style == PlotStyle::kLines    ? "lines"
                     : figure.style == PlotStyle::kPoints ? "points"
                                                          : "linespoints";
  out << "plot ";
  const auto plotted = detail::plotted_series(figure);
  for (std::size_t s = 0; s < plotted.size(); ++s) {
    const Series& series = *plotted[s];
    const int point = series.variant == 0 ? kFilledPoints[s % kFilledPoints.size()]
                                          : kOpenPoints[(series.variant - 1) % kOpenPoints.size()];
    if (s) out << ", \\\n     ";
    out << quoted(data_name) << " index " << s << " using 1:2 with " << with << " linewidth 2 linecolor rgb "
        << quoted(series.colour.empty() ? palette_colour(s) : series.colour) << " dashtype " << series.variant % 5 + 1
        << " pointtype " << point << " pointsize points title " << quoted(series.title);
  }
  out << '\n';
  return out.str();
}

// The terminal line for one image format at one width. A paper's PNG is drawn at 300 dpi, so that it can stand in
// for the PDF; the report's is sized for a screen.
std::string gnuplot_terminal(ImageFormat format, FigureWidth width) {
  struct Size {
    double width_in, height_in;
    int font_pt;
  };
  const Size size = width == FigureWidth::kOneColumn    ? Size{3.5, 2.6, 7}
                    : width == FigureWidth::kTwoColumns ? Size{7.0, 3.0, 8}
                                                        : Size{6.0, 3.7, 9};
  const auto px = [](double inches, double dpi) { return std::to_string(static_cast<int>(inches * dpi)); };
  // `points` is the plot's point size: the vector terminals draw a point of size 1 at a fixed size in points, as
  // large on a 3.5 in figure as on a 6 in one, so a paper's figure takes smaller ones.
  const std::string points = "\npoints = " + std::string(width == FigureWidth::kReport ? "1.3" : "0.6");
  switch (format) {
    case ImageFormat::kPdf:
      return "set terminal pdfcairo size " + significant(size.width_in) + "in," + significant(size.height_in) +
             "in font 'sans," + std::to_string(size.font_pt) + "'" +
             // pdfcairo halves fonts by default, which the report's layout is made for; a paper's are the sizes asked.
             (width == FigureWidth::kReport ? "" : " fontscale 1") + points;
    case ImageFormat::kPng:
      if (width == FigureWidth::kReport) return "set terminal pngcairo size 1000,620 font 'sans,11'" + points;
      // pngcairo sets text at 72 points an inch of its pixels: 300 dpi scales the fonts, lines and points by 300/72.
      return "set terminal pngcairo size " + px(size.width_in, 300) + "," + px(size.height_in, 300) + " font 'sans," +
             significant(size.font_pt * 300.0 / 72, 3) + "' linewidth " + significant(300.0 / 72, 3) + " pointscale " +
             significant(300.0 / 72, 3) + points;
    case ImageFormat::kSvg:
      // SVG's user unit is a point here (72 an inch), so the drawing scales as the PDF does.
      return "set terminal svg size " + px(size.width_in, 72) + "," + px(size.height_in, 72) + " font 'sans," +
             std::to_string(size.font_pt) + "' background rgb 'white'" + points;
    case ImageFormat::kPgfplots:
      break;
  }
  throw InternalError("gnuplot_terminal: no gnuplot terminal for pgfplots");
}

}  // namespace

const std::vector<std::string>& plot_style_names() { return kStyleNames; }

bool has_data(const Figure& figure) {
  if (figure.style == PlotStyle::kBars) return !figure.bars.empty();
  if (figure.style == PlotStyle::kStacked) {
    return std::any_of(figure.stacked.begin(), figure.stacked.end(), [](const StackedBar& bar) {
      return std::any_of(bar.values.begin(), bar.values.end(), [](double v) { return v > 0; });
    });
  }
  return !detail::plotted_series(figure).empty();
}

std::string palette_colour(std::size_t index) { return kPalette[index % kPalette.size()]; }

PlotStyle plot_style_from_string(const std::string& name) {
  for (std::size_t i = 0; i < kStyleNames.size(); ++i) {
    if (kStyleNames[i] == name) return static_cast<PlotStyle>(i);
  }
  throw UnknownNameError("plot style", name, kStyleNames);
}

ImageFormat image_format_from_string(const std::string& name) {
  if (name == "pgfplots") return ImageFormat::kPgfplots;
  for (std::size_t i = 0; i < kFormatNames.size(); ++i) {
    if (kFormatNames[i] == name) return static_cast<ImageFormat>(i);
  }
  throw UnknownNameError("figure format", name, kFormatNames);
}

std::string extension_of(ImageFormat format) { return kFormatNames.at(static_cast<std::size_t>(format)); }

const std::vector<std::string>& image_format_names() { return kFormatNames; }

FigureWidth figure_width_from_string(const std::string& name) {
  for (std::size_t i = 0; i < kWidthNames.size(); ++i) {
    if (kWidthNames[i] == name) return static_cast<FigureWidth>(i);
  }
  throw UnknownNameError("figure width", name, kWidthNames);
}

const std::vector<std::string>& figure_width_names() { return kWidthNames; }

std::vector<std::filesystem::path> figure_files(const std::filesystem::path& stem, const RenderOptions& options) {
  std::vector<std::filesystem::path> files{stem.string() + ".dat", stem.string() + ".gp"};
  for (const auto format : options.formats) files.emplace_back(stem.string() + "." + extension_of(format));
  return files;
}

void render_figure(const Figure& figure, const std::filesystem::path& stem, const RenderOptions& options) {
  check_values(figure, stem);
  if (!has_data(figure)) throw InputError(stem.string() + ": figure '" + figure.title + "' has no data");
  const std::filesystem::path folder = stem.parent_path().empty() ? "." : stem.parent_path();
  const std::string name = stem.filename().string();
  const std::string commands = plot_commands(figure, name + ".dat", options.width);

  // The gnuplot terminals asked for, each rendering to a temporary name first.
  std::vector<std::string> rendered;
  std::ostringstream terminals;
  for (const auto format : options.formats) {
    if (format == ImageFormat::kPgfplots) continue;
    const std::string extension = extension_of(format);
    terminals << gnuplot_terminal(format, options.width) << "\nset output " << quoted(name + ".tmp." + extension)
              << '\n'
              << (rendered.empty() ? commands : "replot\n") << "unset output\n";
    rendered.push_back(extension);
  }
  std::ostringstream script;
  script << "# gnuplot script written by dsgd; renders " << name << ".{" << join(rendered, ",") << "} from " << name
         << ".dat\n"
         << (rendered.empty() ? "points = 1.3\n" + commands : terminals.str());

  write_file_atomically(folder / (name + ".dat"), data_file(figure));
  write_file_atomically(folder / (name + ".gp"), script.str());
  for (const auto format : options.formats) {
    if (format == ImageFormat::kPgfplots) {
      write_file_atomically(folder / (name + ".tex"), detail::pgfplots_figure(figure, options.width, name + ".gp"));
    }
  }
  if (rendered.empty()) return;

  const auto result = run_process({"gnuplot", name + ".gp"}, std::chrono::seconds(60), folder);
  const auto remove_temporaries = [&] {
    std::error_code ignored;
    for (const auto& extension : rendered) std::filesystem::remove(folder / (name + ".tmp." + extension), ignored);
  };
  if (result.timed_out || result.exit_code != 0) {
    remove_temporaries();
    std::string first_line = result.output.substr(0, result.output.find('\n'));
    throw Error((folder / (name + ".gp")).string() + ": gnuplot " +
                (result.timed_out ? std::string("timed out after 60 s") : "failed: " + first_line));
  }
  std::error_code ec;
  for (const auto& extension : rendered) {
    if (!ec) std::filesystem::rename(folder / (name + ".tmp." + extension), folder / (name + "." + extension), ec);
  }
  if (ec) {
    remove_temporaries();
    throw IoError((folder / name).string() + ": cannot move rendered figure into place: " + ec.message());
  }
}

}  // namespace dsgd::reports
