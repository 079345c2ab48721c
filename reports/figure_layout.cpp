#include "reports/figure_layout.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/format.hpp"

namespace dsgd::reports::detail {

std::string number(double value) { return significant(value, 17); }

std::vector<const Series*> plotted_series(const Figure& figure) {
  std::vector<const Series*> plotted;
  for (const auto& series : figure.series) {
    if (!series.points.empty()) plotted.push_back(&series);
  }
  return plotted;
}

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

bool labels_values(const Figure& figure) {
  return std::all_of(figure.stacked.begin(), figure.stacked.end(), [](const StackedBar& bar) {
    return std::count_if(bar.values.begin(), bar.values.end(), [](double v) { return v > 0; }) <= 1;
  });
}

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

std::string tic_label(double x) {
  if (x != std::floor(x)) return significant(x, 3);  // 0.0833, 21.3: a tic, not a table
  if (x < 1e5) return significant(x);
  const double exponent = std::log2(x);
  if (exponent == std::floor(exponent)) {
    return exponent >= 20 ? significant(x / 1048576) + "M" : significant(x / 1024) + "K";
  }
  return x >= 1e6 ? significant(x / 1e6, 3) + "M" : significant(x / 1e3, 3) + "k";
}

std::vector<double> data_x_tics(const Figure& figure) {
  // Tics at the data's x values when there are at most this many distinct ones (cores 68..4352, threads 1, 2, 4).
  constexpr std::size_t kMaxDataTics = 16;
  std::set<double> xs;
  bool whole = true;
  for (const auto& series : figure.series) {
    for (const auto& point : series.points) {
      xs.insert(point.first);
      whole &= point.first == std::floor(point.first);
    }
  }
  if (xs.empty() || xs.size() > kMaxDataTics || !(figure.log_x || whole)) return {};
  const double spacing = figure.log_x && *xs.begin() > 0 ? std::pow(*xs.rbegin() / *xs.begin(), 1.0 / 12) : 0;
  std::vector<double> tics;
  for (auto it = xs.begin(); it != xs.end(); ++it) {
    if (it != xs.begin() && spacing > 0 && *it < tics.back() * spacing) {
      if (std::next(it) != xs.end()) continue;
      // The last value is kept; the one before it gives way where their labels would touch (544 and 545), unless
      // it is the first.
      if (tics.size() > 1 && *it < tics.back() * std::sqrt(spacing)) tics.pop_back();
    }
    tics.push_back(*it);
  }
  return tics;
}

std::pair<double, double> data_range(const Figure& figure, bool y_axis) {
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  for (const Series* series : plotted_series(figure)) {
    for (const auto& point : series->points) {
      const double value = y_axis ? point.second : point.first;
      low = std::min(low, value);
      high = std::max(high, value);
    }
  }
  if (y_axis) {
    for (const auto& bar : figure.bars) {
      low = std::min(low, bar.second);
      high = std::max(high, bar.second);
    }
  }
  if (low > high) return {0, 0};
  return {low, high};
}

std::vector<double> log_axis_tics(double low, double high) {
  if (!(low > 0) || !(high >= low) || high / low >= 100) return {};
  auto tics_with = [&](const std::vector<double>& mantissas) {
    std::vector<double> tics;
    for (int exponent = static_cast<int>(std::floor(std::log10(low))) - 1;
         exponent <= static_cast<int>(std::ceil(std::log10(high))); ++exponent) {
      for (double mantissa : mantissas) {
        // Rounded through text, so that 3 x 0.1 is the tic 0.3 and not 0.30000000000000004.
        const double tic = std::stod(significant(mantissa * std::pow(10.0, exponent), 6));
        if (tic >= low / 1.06 && tic <= high * 1.06) tics.push_back(tic);
      }
    }
    return tics;
  };
  auto tics = tics_with({1, 2, 3, 4, 5, 6, 7, 8, 9});
  if (tics.size() > 8) tics = tics_with({1, 2, 5});
  if (tics.size() > 8) return {};
  if (tics.size() < 3) tics = tics_with({1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5, 9, 9.5});
  if (tics.size() < 2) {
    // Data within one step of the mantissas (0.42 to 0.47): tics at both ends, so the axis still has a scale.
    tics = {std::stod(significant(low, 2)), std::stod(significant(high, 2))};
    if (tics[0] == tics[1]) tics.pop_back();
  }
  return tics;
}

}  // namespace dsgd::reports::detail
