#pragma once
// Order statistics and means of samples (timings, errors), one definition for every caller.

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

}  // namespace dsgd
