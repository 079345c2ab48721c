// simulate/analytic/tree_schedules: the binomial broadcast's and reduce's and the recursive-doubling allreduce's
// schedules enumerated in closed form are record_schedule's, activity for activity, on powers of two and the sizes
// around them, from several roots.

#include "simulate/analytic/tree_schedules.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "core/collectives.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

constexpr std::size_t kCount = 1000;

CollectiveCall call_of(const std::string& name, int root) {
  CollectiveCall call;
  call.name = name;
  // As core/collectives.cpp's call_of writes it: the enumeration reads the root from the key.
  call.key = "count " + std::to_string(kCount) + ", root " + std::to_string(root) + ", tag 0";
  call.count = kCount;
  return call;
}

CollectiveSchedule recorded(const std::string& name, int size, int root) {
  return record_schedule(call_of(name, root), size, [&](Comm& comm) {
    if (name == "broadcast") {
      broadcast(comm, {nullptr, kCount}, root);
    } else if (name == "reduce") {
      reduce(comm, {nullptr, kCount}, root);
    } else {
      allreduce(comm, {nullptr, kCount}, AllreduceAlgorithm::kRecursiveDoubling);
    }
  });
}

// A step's activities as sorted tuples: the order inside a step does not matter to its price.
using Activities = std::vector<std::tuple<int, int, double>>;
Activities activities(const ScheduleStep& step) {
  Activities all;
  for (const auto& t : step.transfers) all.emplace_back(t.source, t.destination, static_cast<double>(t.bytes));
  for (const auto& c : step.computes) all.emplace_back(c.rank, -1, c.flops);
  std::sort(all.begin(), all.end());
  return all;
}

void expect_same(const CollectiveSchedule& expected, const CollectiveSchedule& actual, const std::string& what) {
  ASSERT_EQ(actual.steps.size(), expected.steps.size()) << what;
  for (std::size_t k = 0; k < expected.steps.size(); ++k) {
    EXPECT_EQ(activities(actual.steps[k]), activities(expected.steps[k])) << what << ", step " << k;
    for (const auto& c : actual.steps[k].computes) EXPECT_EQ(c.kernel_class, "elementwise") << what;
  }
  EXPECT_EQ(actual.leave_after, expected.leave_after) << what;
}

TEST(AnalyticTreeSchedules, EqualRecordedSchedulesOnManySizesAndRoots) {
  int compared = 0;
  const std::string doubling = allreduce_call_name(AllreduceAlgorithm::kRecursiveDoubling);
  for (const std::string& name : {std::string("broadcast"), std::string("reduce"), doubling}) {
    for (const int size : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 129, 1000, 1025}) {
      for (const int root : {0, 1, size / 2, size - 1}) {
        if (root >= size || (name == doubling && root != 0)) continue;  // the allreduce's root is always 0
        const std::string what = name + " on " + std::to_string(size) + " ranks from root " + std::to_string(root);
        expect_same(recorded(name, size, root), streamed_schedule(call_of(name, root), size), what);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 170);
}

// A wrong layering changes a step's membership: a test of the comparison itself, so that it cannot pass vacuously.
TEST(AnalyticTreeSchedules, ComparisonSeesAShiftedStep) {
  CollectiveSchedule shifted = streamed_schedule(call_of("reduce", 0), 6);
  ASSERT_FALSE(shifted.steps[2].transfers.empty());
  shifted.steps[0].transfers.push_back(shifted.steps[2].transfers.back());
  shifted.steps[2].transfers.pop_back();
  const CollectiveSchedule expected = recorded("reduce", 6, 0);
  EXPECT_NE(activities(shifted.steps[0]), activities(expected.steps[0]));
}

TEST(AnalyticTreeSchedules, RefusesOtherCollectivesAndBadRoots) {
  EXPECT_FALSE(has_tree_schedule(call_of("allreduce ring", 0)));
  EXPECT_TRUE(has_tree_schedule(call_of(allreduce_call_name(AllreduceAlgorithm::kRecursiveDoubling), 0)));
  EXPECT_TRUE(has_tree_schedule(call_of("reduce", 0)));
  EXPECT_THROW(streamed_schedule(call_of("allreduce ring", 0), 4), InputError);
  EXPECT_THROW(streamed_schedule(call_of("broadcast", 4), 4), InputError);
  CollectiveCall rootless = call_of("reduce", 0);
  rootless.key = "count 1000";
  EXPECT_THROW(streamed_schedule(rootless, 4), InputError);
}

}  // namespace
}  // namespace dsgd::simulate
