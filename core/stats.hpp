#pragma once
// Order statistics and means of samples (timings, errors), one definition for every caller.

#include <cstdint>
#include <span>
#include <vector>

namespace dsgd {

// The median: the middle value, or the mean of the two middle values of an even count. Throws InputError for no
// values.
double median(std::vector<double> values);
// The arithmetic mean. Throws InputError for no values.
double mean(std::span<const double> values);
// The q-quantile (0 <= q <= 1) by linear interpolation between order statistics (numpy's default, "linear"):
// quantile(v, 0.5) == median(v). Throws InputError for no values or q outside [0, 1].
double quantile(std::vector<double> values, double q);

// Counts of small non-negative integers (staleness in updates, queue lengths): counts()[k] is how often k was added.
class CountHistogram {
 public:
  // Throws InputError for a negative value.
  void add(std::int64_t value, std::int64_t times = 1);
  void merge(const CountHistogram& other);
  const std::vector<std::int64_t>& counts() const { return counts_; }
  std::int64_t total() const { return total_; }
  bool empty() const { return total_ == 0; }
  // Of the values added; 0 when empty.
  double mean() const;
  std::int64_t max() const;
  // The smallest value v with at least a fraction q of the values <= v (0 < q <= 1); 0 when empty.
  std::int64_t quantile(double q) const;

 private:
  std::vector<std::int64_t> counts_;
  std::int64_t total_ = 0;
};

}  // namespace dsgd
