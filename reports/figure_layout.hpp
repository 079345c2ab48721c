#pragma once
// What the gnuplot and the pgfplots writers of reports/figure.cpp share: which series and segments are drawn, where
// bars stand, and the tics of a log axis. Internal to reports/.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "reports/figure.hpp"

namespace dsgd::reports::detail {

// Every digit a double needs to come back unchanged.
std::string number(double value);

// The series that have points. gnuplot counts data blocks, not comments: an empty series would merge its two
// separators with the next ones and shift every later `index`, mislabelling the lines after it (a diverged run's
// empty curve did). Empty series are left out of the data file and the plot alike.
std::vector<const Series*> plotted_series(const Figure& figure);

// The segments some bar has, by position in Figure::segments: the others get no data block (see plotted_series).
std::vector<std::size_t> plotted_segments(const Figure& figure);

// Whether each kStacked bar is written with its value on top: bars of one segment each (grouped bars), whose
// values may differ by orders of magnitude (a bar of 7 beside one of 1023) and where a bar of 0 would otherwise be
// indistinguishable from a missing one. A total over several segments would say less than the segments do.
bool labels_values(const Figure& figure);

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
BarLayout layout_bars(const Figure& figure);

// A tic's text: the number, to 3 digits unless whole; whole numbers from 100,000 shortened: powers of two in binary
// units (128K, 1M, 4M: bytes, floats), others in decimal ones (100k, 3.1M).
std::string tic_label(double x);

// Tics at the data's own x values where there are few and they are what a reader looks up (a log axis, whose
// default tics are powers of ten; whole numbers such as threads, which should not read 1.5): empty otherwise. On a
// log axis, a value closer than a twelfth of the axis's decades to the last one kept is skipped (it would print
// over it); the last value is always kept, in place of the one before it where those two are closer than half that.
std::vector<double> data_x_tics(const Figure& figure);

// The smallest and largest x (first) or y (second) value of the drawn series; nullopt-like {0, 0} when none.
std::pair<double, double> data_range(const Figure& figure, bool y_axis);

// Labelled tics for a log axis whose data span less than two decades, where gnuplot and pgfplots would label one or
// two powers of ten or none (0.1 and 1 for data between 0.19 and 0.51): 0.2, 0.3, 0.4, 0.5. Mantissas 1-9 where at
// most 8 fall in [low, high], else 1, 2 and 5, and half steps (0.65, 0.7, 0.75) where 1-9 give fewer than 3. Empty
// where those are more than 8 or the data span two decades or more (the decades then label the axis well), or a bound
// is not positive.
std::vector<double> log_axis_tics(double low, double high);

// The figure as a pgfplots axis in a tikzpicture, data inline, for \\input into a LaTeX paper whose preamble loads
// pgfplots (reports/figure_pgfplots.cpp). `script_name` names the gnuplot script beside it in its header.
std::string pgfplots_figure(const Figure& figure, FigureWidth width, const std::string& script_name);

}  // namespace dsgd::reports::detail
