#include "core/stats.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/stopwatch.hpp"

namespace dsgd {
namespace {

TEST(CoreStats, MedianTakesTheMiddleOrTheMeanOfTheTwoMiddleValues) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({1, 1, 1, 9}), 1.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_THROW(median({}), InputError);
}

TEST(CoreStats, MeanAndQuantiles) {
  const std::vector<double> values = {4, 1, 3, 2, 10};
  EXPECT_DOUBLE_EQ(mean(values), 4.0);
  EXPECT_DOUBLE_EQ(quantile(values, 0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(values, 1), 10.0);
  EXPECT_DOUBLE_EQ(quantile(values, 0.5), median(values));
  // Between the 4th (4) and 5th (10) order statistics, 3/4 of the way: numpy's "linear" gives 8.5.
  EXPECT_DOUBLE_EQ(quantile(values, 0.9375), 8.5);
  EXPECT_THROW(mean(std::vector<double>{}), InputError);
  EXPECT_THROW(quantile(values, 1.5), InputError);
  EXPECT_THROW(quantile({}, 0.5), InputError);
}

TEST(CoreStats, CountHistogramSummaries) {
  CountHistogram histogram;
  EXPECT_TRUE(histogram.empty());
  EXPECT_EQ(histogram.mean(), 0);
  EXPECT_EQ(histogram.quantile(0.99), 0);
  histogram.add(2, 98);
  histogram.add(7);
  histogram.add(40);
  EXPECT_EQ(histogram.total(), 100);
  EXPECT_DOUBLE_EQ(histogram.mean(), (2 * 98 + 7 + 40) / 100.0);
  EXPECT_EQ(histogram.quantile(0.5), 2);
  EXPECT_EQ(histogram.quantile(0.98), 2);
  EXPECT_EQ(histogram.quantile(0.99), 7);
  EXPECT_EQ(histogram.quantile(1.0), 40);
  EXPECT_EQ(histogram.max(), 40);
  CountHistogram other;
  other.add(1, 3);
  other.merge(histogram);
  EXPECT_EQ(other.total(), 103);
  EXPECT_EQ(other.counts().at(1), 3);
  EXPECT_THROW(histogram.add(-1), InputError);
  EXPECT_THROW(histogram.quantile(0), InputError);
}

TEST(CoreFormat, PrintsLikePrintfWhateverTheLength) {
  EXPECT_EQ(format("%d ranks on %s", 4, "threads"), "4 ranks on threads");
  EXPECT_EQ(format("%s", std::string(300, 'x').c_str()).size(), 300u);
  EXPECT_EQ(format("%s", ""), "");
  EXPECT_EQ(fixed(0.125, 2), "0.12");  // round half to even in binary: 0.125 is exact
  EXPECT_EQ(fixed(2.0 / 3, 3), "0.667");
  EXPECT_EQ(significant(0.1, 17), "0.10000000000000001");
  EXPECT_EQ(significant(1234567.0), "1.23457e+06");
}

TEST(CoreStopwatch, CountsForward) {
  const Stopwatch watch;
  const double first_s = watch.elapsed_s();
  EXPECT_GE(first_s, 0.0);
  // In sequence: a macro's two arguments may be evaluated in either order (clang takes them right to left).
  const double later_s = seconds_since(watch.start());
  EXPECT_GE(later_s, first_s);
}

}  // namespace
}  // namespace dsgd
