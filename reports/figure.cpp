#include "reports/figure.hpp"

#include <cmath>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/subprocess.hpp"

namespace dsgd::reports {

namespace {

const std::vector<std::string> kStyleNames = {"lines", "points", "linespoints", "bars"};

// gnuplot strings in double quotes: escape backslash and quote.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Every digit a double needs to come back unchanged.
std::string number(double value) { return significant(value, 17); }

void check_log_axis(const Figure& figure, const std::filesystem::path& stem) {
  auto bad = [&](const char* axis, double value) {
    throw InputError(stem.string() + ": figure '" + figure.title + "' has a log " + axis + " axis but a value " +
                     number(value) + " <= 0");
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

std::string data_file(const Figure& figure) {
  std::ostringstream out;
  out << "# " << figure.title << '\n';
  if (figure.style == PlotStyle::kBars) {
    out << "# label value\n";
    for (const auto& [label, value] : figure.bars) out << quoted(label) << ' ' << number(value) << '\n';
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

// The plot commands, shared by the PNG and PDF terminals.
std::string plot_commands(const Figure& figure, const std::string& data_name) {
  std::ostringstream out;
  out << "set title " << quoted(figure.title) << " noenhanced\n";
  out << "set xlabel " << quoted(figure.x_label) << " noenhanced\n";
  out << "set ylabel " << quoted(figure.y_label) << " noenhanced\n";
  out << "set grid\nset key outside right top noenhanced\n";
  if (figure.log_x) out << "set logscale x\n";
  if (figure.log_y) out << "set logscale y\n";
  if (figure.style == PlotStyle::kBars) {
    out << "set style data histogram\nset style fill solid 0.8 border -1\nset boxwidth 0.8\n"
        << "set xtics rotate by -35 noenhanced\nunset key\n";
    if (!figure.log_y) out << "set yrange [0:*]\n";
    out << "plot " << quoted(data_name) << " using 2:xtic(1) with boxes linecolor rgb '#3b6ea8'\n";
    return out.str();
  }
  const char* with = figure.style == PlotStyle::kLines    ? "lines"
                     : figure.style == PlotStyle::kPoints ? "points"
                                                          : "linespoints";
  out << "plot ";
  const auto plotted = plotted_series(figure);
  for (std::size_t s = 0; s < plotted.size(); ++s) {
    if (s) out << ", \\\n     ";
    out << quoted(data_name) << " index " << s << " using 1:2 with " << with << " linewidth 2 title "
        << quoted(plotted[s]->title);
  }
  out << '\n';
  return out.str();
}

}  // namespace

PlotStyle plot_style_from_string(const std::string& name) {
  for (std::size_t i = 0; i < kStyleNames.size(); ++i) {
    if (kStyleNames[i] == name) return static_cast<PlotStyle>(i);
  }
  throw UnknownNameError("plot style", name, kStyleNames);
}

void render_figure(const Figure& figure, const std::filesystem::path& stem) {
  if (figure.style == PlotStyle::kBars ? figure.bars.empty() : plotted_series(figure).empty()) {
    throw InputError(stem.string() + ": figure '" + figure.title + "' has no data");
  }
  check_log_axis(figure, stem);
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
