// simulate/pipeline_timeline: with uniform op times GPipe and 1F1B take (m + p - 1) forward-backward slots, a
// bubble of (p - 1) / m, and the interleaved schedule (p - 1) / (v m) (Narayanan et al., SC'21, section 2.2);
// p2p transfers lengthen the iteration; schedules that cannot run are refused with the rank and op that stall.

#include "simulate/pipeline_timeline.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

using algorithms::PipelineOp;
using algorithms::PipelineSchedule;
using Kind = PipelineOp::Kind;

constexpr double kTolerance = 1e-9;

// Every rank's chunk takes forward_s forward and backward_s backward.
PipelineOpTimes uniform_times(int stages, int chunks, double forward_s, double backward_s, double p2p_s = 0) {
  PipelineOpTimes times;
  times.forward_s.assign(static_cast<std::size_t>(stages),
                         std::vector<double>(static_cast<std::size_t>(chunks), forward_s));
  times.backward_s.assign(static_cast<std::size_t>(stages),
                          std::vector<double>(static_cast<std::size_t>(chunks), backward_s));
  times.p2p_s = p2p_s;
  return times;
}

PipelineTimeline timeline_of(PipelineSchedule schedule, int p, int m, int v, double p2p_s = 0) {
  return pipeline_timeline(algorithms::pipeline_schedule(schedule, p, m, v),
                           uniform_times(p, v, 1.0 / v, 2.0 / v, p2p_s));
}

TEST(PipelineTimeline, GpipeAnd1F1BTakeMPlusPMinusOneSlots) {
  for (PipelineSchedule schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward}) {
    for (const auto& [p, m] : std::vector<std::pair<int, int>>{{1, 1}, {1, 5}, {2, 4}, {4, 8}, {4, 2}, {8, 32}}) {
      const PipelineTimeline timeline = timeline_of(schedule, p, m, 1);
      const std::string where =
          std::string(to_string(schedule)) + " p=" + std::to_string(p) + " m=" + std::to_string(m);
      const double expected_makespan_s = (m + p - 1) * 3.0;
      const double expected_bubble = static_cast<double>(p - 1) / m;
      EXPECT_NEAR(timeline.makespan_s, expected_makespan_s, kTolerance)
          << where << ": makespan " << timeline.makespan_s
          << " s, expectation (m + p - 1) * 3 = " << expected_makespan_s;
      EXPECT_NEAR(timeline.bubble_fraction, expected_bubble, kTolerance)
          << where << ": bubble " << timeline.bubble_fraction << ", expectation (p - 1) / m = " << expected_bubble;
      ASSERT_EQ(timeline.busy_s.size(), static_cast<std::size_t>(p));
      ASSERT_EQ(timeline.idle_s.size(), static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) {
        EXPECT_NEAR(timeline.busy_s[static_cast<std::size_t>(r)], 3.0 * m, kTolerance) << where;
        EXPECT_NEAR(timeline.idle_s[static_cast<std::size_t>(r)], 3.0 * (p - 1), kTolerance) << where;
      }
    }
  }
}

TEST(PipelineTimeline, InterleavingDividesTheBubbleByTheChunks) {
  // A chunk holds 1/v of a rank's layers: forward 1/v, backward 2/v.
  for (const auto& [p, m, v] :
       std::vector<std::tuple<int, int, int>>{{2, 4, 2}, {4, 8, 2}, {4, 8, 4}, {3, 6, 3}, {4, 4, 2}, {8, 16, 3}}) {
    const PipelineTimeline timeline = timeline_of(PipelineSchedule::kInterleaved, p, m, v);
    const std::string where = "p=" + std::to_string(p) + " m=" + std::to_string(m) + " v=" + std::to_string(v);
    const double expected_bubble = static_cast<double>(p - 1) / (v * m);
    EXPECT_NEAR(timeline.bubble_fraction, expected_bubble, kTolerance)
        << where << ": bubble " << timeline.bubble_fraction << ", expectation (p - 1) / (v m) = " << expected_bubble;
    EXPECT_NEAR(timeline.makespan_s, 3.0 * m * (1 + expected_bubble), kTolerance) << where;
    // One chunk per rank is 1F1B with twice the warm-up: the same bubble.
    EXPECT_NEAR(timeline_of(PipelineSchedule::kInterleaved, p, m, 1).bubble_fraction, static_cast<double>(p - 1) / m,
                kTolerance)
        << where;
  }
}

TEST(PipelineTimeline, P2pTransfersLengthenTheIteration) {
  // One micro-batch crosses p - 1 links forward and p - 1 back: p (f + b) + 2 (p - 1) p2p.
  const PipelineTimeline one = timeline_of(PipelineSchedule::kOneForwardOneBackward, 4, 1, 1, 0.25);
  EXPECT_NEAR(one.makespan_s, 4 * 3.0 + 6 * 0.25, kTolerance) << "expectation p (f + b) + 2 (p - 1) p2p";
  for (PipelineSchedule schedule : algorithms::kPipelineSchedules) {
    const int v = schedule == PipelineSchedule::kInterleaved ? 2 : 1;
    const double without_s = timeline_of(schedule, 4, 8, v).makespan_s;
    const double with_s = timeline_of(schedule, 4, 8, v, 0.25).makespan_s;
    EXPECT_GE(with_s, without_s + 6 * 0.25 - kTolerance) << to_string(schedule);
  }
}

TEST(PipelineTimeline, OneStageHasNoP2pBetweenItsChunks) {
  // p = 1: consecutive virtual stages share the rank, so p2p costs nothing and the rank never waits.
  const PipelineTimeline timeline = timeline_of(PipelineSchedule::kInterleaved, 1, 2, 3, 5.0);
  EXPECT_NEAR(timeline.makespan_s, 2 * 3.0, kTolerance);
  EXPECT_NEAR(timeline.bubble_fraction, 0.0, kTolerance);
}

TEST(PipelineTimeline, TheSlowestStageSetsThePace) {
  // GPipe, p = 2, m = 3, stage 1 twice as slow (forward 2, backward 4): forwards end at 1 + 3 * 2 = 7 on stage 1,
  // its backwards at 7 + 3 * 4 = 19, and stage 0's last backward at 19 + 2 = 21; busiest 18.
  PipelineOpTimes times = uniform_times(2, 1, 1, 2);
  times.forward_s[1][0] = 2;
  times.backward_s[1][0] = 4;
  const PipelineTimeline timeline =
      pipeline_timeline(algorithms::pipeline_schedule(PipelineSchedule::kGpipe, 2, 3, 1), times);
  EXPECT_NEAR(timeline.makespan_s, 21.0, kTolerance);
  EXPECT_NEAR(timeline.busy_s[0], 9.0, kTolerance);
  EXPECT_NEAR(timeline.busy_s[1], 18.0, kTolerance);
  EXPECT_NEAR(timeline.idle_s[0], 12.0, kTolerance);
  EXPECT_NEAR(timeline.bubble_fraction, 3.0 / 18.0, kTolerance);
}

TEST(PipelineTimeline, LargeSchedulesComplete) {
  // 64 x 512 and 35 x 280 x 3: hundreds of thousands of ops, scheduled once each.
  const PipelineTimeline flat = timeline_of(PipelineSchedule::kOneForwardOneBackward, 64, 512, 1);
  EXPECT_NEAR(flat.bubble_fraction, 63.0 / 512, kTolerance);
  const PipelineTimeline gpipe = timeline_of(PipelineSchedule::kGpipe, 64, 512, 1, 0.01);
  EXPECT_GT(gpipe.makespan_s, (512 + 63) * 3.0);
  const PipelineTimeline interleaved = timeline_of(PipelineSchedule::kInterleaved, 35, 280, 3);
  EXPECT_NEAR(interleaved.bubble_fraction, 34.0 / (3 * 280), kTolerance);
}

TEST(PipelineTimeline, RefusesTimesThatDoNotFitTheSchedule) {
  const auto ops = algorithms::pipeline_schedule(PipelineSchedule::kOneForwardOneBackward, 2, 2, 1);
  EXPECT_NE(
      testing::input_error([&] { pipeline_timeline(ops, uniform_times(3, 1, 1, 2)); }).find("not the schedule's 2"),
      std::string::npos);
  PipelineOpTimes ragged = uniform_times(2, 1, 1, 2);
  ragged.backward_s[1].push_back(2);
  EXPECT_NE(testing::input_error([&] { pipeline_timeline(ops, ragged); }).find("stage 1 has 1 forward and 2 backward"),
            std::string::npos);
  PipelineOpTimes negative = uniform_times(2, 1, 1, 2);
  negative.forward_s[0][0] = -1;
  EXPECT_NE(testing::input_error([&] { pipeline_timeline(ops, negative); }).find("finite and >= 0"), std::string::npos);
  EXPECT_NE(testing::input_error([&] {
              pipeline_timeline(ops, uniform_times(2, 1, 1, 2, std::numeric_limits<double>::infinity()));
            }).find("p2p_s"),
            std::string::npos);
  EXPECT_NE(testing::input_error([&] { pipeline_timeline({}, uniform_times(1, 1, 1, 2)); }).find("no ranks"),
            std::string::npos);
  auto other_chunk = ops;
  other_chunk[0][0].chunk = 1;
  EXPECT_NE(testing::input_error([&] {
              pipeline_timeline(other_chunk, uniform_times(2, 1, 1, 2));
            }).find("rank 0's op 0 names micro-batch 0 on chunk 1"),
            std::string::npos);
}

TEST(PipelineTimeline, RefusesSchedulesThatCannotRun) {
  const auto ops = algorithms::pipeline_schedule(PipelineSchedule::kOneForwardOneBackward, 2, 2, 1);
  const PipelineOpTimes times = uniform_times(2, 1, 1, 2);

  auto missing = ops;  // rank 1 drops its backward of micro-batch 1
  missing[1].pop_back();
  std::string message = testing::input_error([&] { pipeline_timeline(missing, times); });
  EXPECT_NE(message.find("rank 1 never runs the backward of micro-batch 1"), std::string::npos) << message;

  auto twice = ops;
  twice[0].push_back(twice[0].front());
  message = testing::input_error([&] { pipeline_timeline(twice, times); });
  EXPECT_NE(message.find("rank 0 runs twice the forward of micro-batch 0"), std::string::npos) << message;

  // Rank 1 runs a backward before its forward: it would wait for itself.
  auto backward_first = ops;
  std::swap(backward_first[1][0], backward_first[1][1]);
  message = testing::input_error([&] { pipeline_timeline(backward_first, times); });
  EXPECT_NE(message.find("rank 1's op 0, the backward of micro-batch 0"), std::string::npos) << message;
  EXPECT_NE(message.find("which comes later on rank 1"), std::string::npos) << message;

  // Rank 0 waits for micro-batch 1's gradient, which rank 1 can only send after rank 0's forward of it: a cycle.
  const std::vector<std::vector<PipelineOp>> cycle = {
      {{Kind::kForward, 0, 0}, {Kind::kBackward, 1, 0}, {Kind::kForward, 1, 0}, {Kind::kBackward, 0, 0}},
      {{Kind::kForward, 0, 0}, {Kind::kBackward, 0, 0}, {Kind::kForward, 1, 0}, {Kind::kBackward, 1, 0}}};
  message = testing::input_error([&] { pipeline_timeline(cycle, times); });
  EXPECT_NE(message.find("rank 0's op 1, the backward of micro-batch 1"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 cannot reach: it waits at its op 2, the forward of micro-batch 1"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace dsgd::simulate
