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

void CountHistogram::add(std::int64_t value, std::int64_t times) {
  if (value < 0 || times < 0) {
    throw InputError("histogram: counts are of non-negative values, got " + std::to_string(value) + " x " +
                     std::to_string(times));
  }
  if (static_cast<std::size_t>(value) >= counts_.size()) counts_.resize(static_cast<std::size_t>(value) + 1, 0);
  counts_[static_cast<std::size_t>(value)] += times;
  total_ += times;
}

void CountHistogram::merge(const CountHistogram& other) {
  for (std::size_t k = 0; k < other.counts_.size(); ++k) {
    if (other.counts_[k] > 0) add(static_cast<std::int64_t>(k), other.counts_[k]);
  }
}

double CountHistogram::mean() const {
  if (total_ == 0) return 0;
  double sum = 0;
  for (std::size_t k = 0; k < counts_.size(); ++k) sum += static_cast<double>(k) * static_cast<double>(counts_[k]);
  return sum / static_cast<double>(total_);
}

std::int64_t CountHistogram::max() const {
  for (std::size_t k = counts_.size(); k-- > 0;) {
    if (counts_[k] > 0) return static_cast<std::int64_t>(k);
  }
  return 0;
}

std::int64_t CountHistogram::quantile(double q) const {
  if (!(q > 0 && q <= 1)) throw InputError("histogram: quantile must be in (0, 1], got " + std::to_string(q));
  if (total_ == 0) return 0;
  const double needed = q * static_cast<double>(total_);
  std::int64_t seen = 0;
  for (std::size_t k = 0; k < counts_.size(); ++k) {
    seen += counts_[k];
    if (static_cast<double>(seen) >= needed) return static_cast<std::int64_t>(k);
  }
  return max();
}

}  // namespace dsgd
