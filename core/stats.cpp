#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.hpp"

namespace dsgd {

namespace {

void require_values(std::size_t count, const char* what) {
  if (count == 0) throw InputError(std::string(what) + " of no values");
}

}  // namespace

double median(std::vector<double> values) {
  require_values(values.size(), "median");
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

double mean(std::span<const double> values) {
  require_values(values.size(), "mean");
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double quantile(std::vector<double> values, double q) {
  require_values(values.size(), "quantile");
  if (!(q >= 0 && q <= 1)) throw InputError("quantile " + std::to_string(q) + " is outside [0, 1]");
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

}  // namespace dsgd
