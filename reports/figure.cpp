#include "reports/figure.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/subprocess.hpp"

namespace dsgd::reports {

namespace {

const std::vector<std::string> kStyleNames = {"lines", "points", "linespoints", "bars", "stacked"};

// Colour-blind-safe colours (Okabe and Ito), yellow last as it is faint on white.
const std::vector<std::string> kPalette = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                           "#cc79a7", "#56b4e9", "#000000", "#f0e442"};
// Filled shapes tell series apart besides their colours; a variant of a colour (published beside predicted) is
// drawn dashed with an open shape.
const std::vector<int> kFilledPoints = {7, 5, 9, 11, 13};
const std::vector<int> kOpenPoints = {6, 4, 8, 10, 12};
// Tics at the data's x values when there are at most this many distinct ones (cores 68..4352, threads 1, 2, 4).
constexpr std::size_t kMaxDataTics = 16;
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

// Every digit a double needs to come back unchanged.
std::string number(double value) { return significant(value, 17); }

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

// The series that have points. gnuplot counts data blocks, not comments: an empty series would merge its two
// separators with the next ones and shift every later `index`, mislabelling the lines after it (a diverged run's
// empty curve did). Empty series are left out of the data file and the plot alike.
std::vector<const Series*> plotted_series(const Figure& figure) {
  std::vector<const Series*> plotted;
  for (const auto& series : figure.series) {
    if (!series.points.empty()) plotted.push_back(&series);
  }
  return plotted;
}

// The segments some bar has, by position in Figure::segments: the others get no data block (see plotted_series).
std::vector<std::size_t> plotted_segments(const Figure& figure) {
  std::vector<std::size_t> plotted;
  for (std::size_t s = 0; s < figure.segments.size(); ++s) {
    for (const auto& bar : figure.stacked) {
      if (bar.values[s] > 0) {
        plotted.push_back(s);
        break;
      }
    }
  }
  return plotted;
}

// Whether each kStacked bar is written with its value on top: bars of one segment each (grouped bars), whose
// values may differ by orders of magnitude (a bar of 7 beside one of 1023) and where a bar of 0 would otherwise be
// indistinguishable from a missing one. A total over several segments would say less than the segments do.
bool labels_values(const Figure& figure) {
  return std::all_of(figure.stacked.begin(), figure.stacked.end(), [](const StackedBar& bar) {
    return std::count_if(bar.values.begin(), bar.values.end(), [](double v) { return v > 0; }) <= 1;
  });
}

// kStacked layout: bars one unit apart, groups of several bars a further gap apart.
struct BarLayout {
  std::vector<double> x;  // per bar
  struct Group {
    std::string name;
    double centre;
  };
  std::vector<Group> groups;
  bool labelled = false;  // some bar has a label of its own
};

BarLayout layout_bars(const Figure& figure) {
  BarLayout layout;
  bool groups_of_several = false;
  for (std::size_t b = 0; b < figure.stacked.size(); ++b) {
    layout.labelled |= !figure.stacked[b].label.empty();
    if (b && figure.stacked[b].group == figure.stacked[b - 1].group) groups_of_several = true;
  }
  double x = 0;
  std::size_t first = 0;  // the current group's first bar
  for (std::size_t b = 0; b < figure.stacked.size(); ++b) {
    const bool new_group = b == 0 || figure.stacked[b].group != figure.stacked[b - 1].group;
    if (new_group && b) {
      layout.groups.push_back({figure.stacked[first].group, (layout.x[first] + layout.x[b - 1]) / 2});
      first = b;
    }
    x += new_group && b && groups_of_several ? 1.6 : 1.0;
    layout.x.push_back(x);
  }
  if (!figure.stacked.empty()) {
    layout.groups.push_back({figure.stacked[first].group, (layout.x[first] + layout.x.back()) / 2});
  }
  return layout;
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
    const BarLayout layout = layout_bars(figure);
    const auto plotted = plotted_segments(figure);
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
    if (labels_values(figure)) {
      out << "\n\n# values: x top text\n";
      for (std::size_t b = 0; b < figure.stacked.size(); ++b) {
        double top = 0;
        for (double value : figure.stacked[b].values) top += value;
        out << number(layout.x[b]) << ' ' << number(top) << ' ' << quoted(significant(top, 4)) << '\n';
      }
    }
    return out.str();
  }
  const auto plotted = plotted_series(figure);
  for (std::size_t s = 0; s < plotted.size(); ++s) {
    if (s) out << "\n\n";  // two blank lines: the next gnuplot index
    out << "# series " << s << ": " << plotted[s]->title << "\n# x y\n";
    for (const auto& [x, y] : plotted[s]->points) out << number(x) << ' ' << number(y) << '\n';
  }
  return out.str();
}

// A tic's text: the number, to 3 digits unless whole; whole numbers from 100,000 shortened: powers of two in binary
// units (128K, 1M, 4M: bytes, floats), others in decimal ones (100k, 3.1M).
std::string tic_label(double x) {
  if (x != std::floor(x)) return significant(x, 3);  // 0.0833, 21.3: a tic, not a table
  if (x < 1e5) return significant(x);
  const double exponent = std::log2(x);
  if (exponent == std::floor(exponent)) {
    return exponent >= 20 ? significant(x / 1048576) + "M" : significant(x / 1024) + "K";
  }
  return x >= 1e6 ? significant(x / 1e6, 3) + "M" : significant(x / 1e3, 3) + "k";
}

// Tics at the data's own x values where there are few and they are what a reader looks up (a log axis, whose
// default tics are powers of ten; whole numbers such as threads, which should not read 1.5): "" otherwise.
std::string data_tics(const Figure& figure) {
  std::set<double> xs;
  bool whole = true;
  for (const auto& series : figure.series) {
    for (const auto& point : series.points) {
      xs.insert(point.first);
      whole &= point.first == std::floor(point.first);
    }
  }
  if (xs.empty() || xs.size() > kMaxDataTics || !(figure.log_x || whole)) return "";
  // On a log axis, a tic closer than a twelfth of the axis's decades to the last one kept would print over it.
  const double spacing = figure.log_x && *xs.begin() > 0 ? std::pow(*xs.rbegin() / *xs.begin(), 1.0 / 12) : 0;
  std::string tics = "set xtics (";
  double last = 0;
  for (auto it = xs.begin(); it != xs.end(); ++it) {
    if (it != xs.begin() && spacing > 0 && *it < last * spacing && std::next(it) != xs.end()) continue;
    tics += (it == xs.begin() ? "" : ", ") + quoted(tic_label(*it)) + " " + number(*it);
    last = *it;
  }
  // A little room beside the first and last tics rather than gnuplot's extension to the next round number.
  const double low = *xs.begin();
  const double high = *xs.rbegin();
  const double pad = high > low ? (high - low) * 0.05 : 0.5;
  const std::string range =
      figure.log_x ? number(low / 1.25) + ":" + number(high * 1.25) : number(low - pad) + ":" + number(high + pad);
  return tics + ")\nset xrange [" + range + "]\n";
}

std::string stacked_commands(const Figure& figure, const std::string& data_name) {
  std::ostringstream out;
  const BarLayout layout = layout_bars(figure);
  const bool values = labels_values(figure);
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
  const auto plotted = plotted_segments(figure);
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

// The plot commands, shared by the PNG and PDF terminals.
std::string plot_commands(const Figure& figure, const std::string& data_name) {
  std::ostringstream out;
  out << "set title " << wrapped(figure.title, kTitleWidth) << " noenhanced\n";
  out << "set xlabel " << quoted(figure.x_label) << " noenhanced\n";
  out << "set ylabel " << quoted(figure.y_label) << " noenhanced\n";
  // Long legend entries beside the plot would squeeze it: they go under it instead.
  std::size_t longest_key = 0;
  for (const auto& series : figure.series) longest_key = std::max(longest_key, series.title.size());
  for (const auto& segment : figure.segments) longest_key = std::max(longest_key, segment.title.size());
  out << "set grid\nset key " << (longest_key > kMaxSideKey ? "below" : "outside right top") << " noenhanced\n";
  // %g: gnuplot's default writes small powers of ten with six decimals (0.000010).
  if (figure.log_x) out << "set logscale x\nset format x '%g'\n";
  if (figure.log_y) out << "set logscale y\nset format y '%g'\n";
  if (figure.style == PlotStyle::kBars) {
    out << "set style data histogram\nset style fill solid 0.8 border -1\nset boxwidth 0.8\n"
        << "set xtics rotate by -35 noenhanced\nunset key\n";
    if (!figure.log_y) out << "set yrange [0:*]\n";
    out << "plot " << quoted(data_name) << " using 2:xtic(1) with boxes linecolor rgb '#3b6ea8'\n";
    return out.str();
  }
  if (figure.style == PlotStyle::kStacked) return out.str() + stacked_commands(figure, data_name);
  out << data_tics(figure);
  const char* with = figure.style == PlotStyle::kLines    ? "lines"
                     : figure.style == PlotStyle::kPoints ? "points"
                                                          : "linespoints";
  out << "plot ";
  const auto plotted = plotted_series(figure);
  for (std::size_t s = 0; s < plotted.size(); ++s) {
    const Series& series = *plotted[s];
    const int point = series.variant == 0 ? kFilledPoints[s % kFilledPoints.size()]
                                          : kOpenPoints[(series.variant - 1) % kOpenPoints.size()];
    if (s) out << ", \\\n     ";
    out << quoted(data_name) << " index " << s << " using 1:2 with " << with << " linewidth 2 linecolor rgb "
        << quoted(series.colour.empty() ? palette_colour(s) : series.colour) << " dashtype " << series.variant % 5 + 1
        << " pointtype " << point << " pointsize 1.3 title " << quoted(series.title);
  }
  out << '\n';
  return out.str();
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
  return !plotted_series(figure).empty();
}

std::string palette_colour(std::size_t index) { return kPalette[index % kPalette.size()]; }

PlotStyle plot_style_from_string(const std::string& name) {
  for (std::size_t i = 0; i < kStyleNames.size(); ++i) {
    if (kStyleNames[i] == name) return static_cast<PlotStyle>(i);
  }
  throw UnknownNameError("plot style", name, kStyleNames);
}

void render_figure(const Figure& figure, const std::filesystem::path& stem) {
  check_values(figure, stem);
  if (!has_data(figure)) throw InputError(stem.string() + ": figure '" + figure.title + "' has no data");
  const std::filesystem::path folder = stem.parent_path().empty() ? "." : stem.parent_path();
  const std::string name = stem.filename().string();
  const std::string commands = plot_commands(figure, name + ".dat");

  std::ostringstream script;
  script << "# gnuplot script written by dsgd; renders " << name << ".png and " << name << ".pdf from " << name
         << ".dat\n";
  script << "set terminal pngcairo size 1000,620 font 'sans,11'\nset output " << quoted(name + ".tmp.png") << '\n'
         << commands;
  script << "set terminal pdfcairo size 6in,3.7in font 'sans,9'\nset output " << quoted(name + ".tmp.pdf") << '\n'
         << "replot\nunset output\n";

  write_file_atomically(folder / (name + ".dat"), data_file(figure));
  write_file_atomically(folder / (name + ".gp"), script.str());

  const auto result = run_process({"gnuplot", name + ".gp"}, std::chrono::seconds(60), folder);
  const auto remove_temporaries = [&] {
    std::error_code ignored;
    std::filesystem::remove(folder / (name + ".tmp.png"), ignored);
    std::filesystem::remove(folder / (name + ".tmp.pdf"), ignored);
  };
  if (result.timed_out || result.exit_code != 0) {
    remove_temporaries();
    std::string first_line = result.output.substr(0, result.output.find('\n'));
    throw Error((folder / (name + ".gp")).string() + ": gnuplot " +
                (result.timed_out ? std::string("timed out after 60 s") : "failed: " + first_line));
  }
  std::error_code ec;
  std::filesystem::rename(folder / (name + ".tmp.png"), folder / (name + ".png"), ec);
  if (!ec) std::filesystem::rename(folder / (name + ".tmp.pdf"), folder / (name + ".pdf"), ec);
  if (ec) {
    remove_temporaries();
    throw IoError((folder / name).string() + ": cannot move rendered figure into place: " + ec.message());
  }
}

}  // namespace dsgd::reports
