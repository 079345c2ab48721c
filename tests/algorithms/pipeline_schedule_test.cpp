// algorithms/pipeline_schedule: every schedule runs each (micro-batch, chunk) forward and backward once per rank,
// forward first; 1F1B and the interleaved schedule follow Megatron-LM's orders op for op; the activations each
// holds at once; the refusals.

#include "algorithms/pipeline_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/error_message.hpp"

namespace dsgd::algorithms {
namespace {

using Kind = PipelineOp::Kind;

PipelineOp forward(int micro_batch, int chunk = 0) { return {Kind::kForward, micro_batch, chunk}; }
PipelineOp backward(int micro_batch, int chunk = 0) { return {Kind::kBackward, micro_batch, chunk}; }

struct Shape {
  PipelineSchedule schedule;
  int stages, micro_batches, chunks;
};

const std::vector<Shape> kShapes = {
    {PipelineSchedule::kGpipe, 1, 1, 1},
    {PipelineSchedule::kGpipe, 4, 8, 1},
    {PipelineSchedule::kGpipe, 5, 3, 1},
    {PipelineSchedule::kOneForwardOneBackward, 1, 3, 1},
    {PipelineSchedule::kOneForwardOneBackward, 4, 8, 1},
    {PipelineSchedule::kOneForwardOneBackward, 8, 3, 1},  // fewer micro-batches than stages
    {PipelineSchedule::kInterleaved, 1, 2, 3},
    {PipelineSchedule::kInterleaved, 2, 4, 2},
    {PipelineSchedule::kInterleaved, 4, 4, 3},
    {PipelineSchedule::kInterleaved, 4, 12, 2},
    {PipelineSchedule::kInterleaved, 3, 6, 1},
};

TEST(PipelineSchedule, NamesRoundTrip) {
  for (PipelineSchedule schedule : kPipelineSchedules) {
    EXPECT_EQ(pipeline_schedule_from_string(to_string(schedule)), schedule);
  }
  EXPECT_EQ(to_string(PipelineSchedule::kOneForwardOneBackward), "1f1b");
  const std::string message = testing::error_of<UnknownNameError>([] { pipeline_schedule_from_string("1F1B-ish"); });
  EXPECT_NE(message.find("gpipe, 1f1b, interleaved"), std::string::npos) << message;
}

TEST(PipelineSchedule, EveryRankRunsEachForwardAndBackwardOnceForwardFirst) {
  for (const Shape& shape : kShapes) {
    const auto ranks = pipeline_schedule(shape.schedule, shape.stages, shape.micro_batches, shape.chunks);
    ASSERT_EQ(ranks.size(), static_cast<std::size_t>(shape.stages));
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const std::string where = std::string(to_string(shape.schedule)) + " p=" + std::to_string(shape.stages) +
                                " m=" + std::to_string(shape.micro_batches) + " v=" + std::to_string(shape.chunks) +
                                " rank " + std::to_string(r);
      EXPECT_EQ(ranks[r].size(), static_cast<std::size_t>(2 * shape.micro_batches * shape.chunks)) << where;
      std::map<std::pair<int, int>, std::size_t> forward_at;
      std::map<std::pair<int, int>, std::size_t> backward_at;
      for (std::size_t i = 0; i < ranks[r].size(); ++i) {
        const PipelineOp& op = ranks[r][i];
        ASSERT_TRUE(op.micro_batch >= 0 && op.micro_batch < shape.micro_batches) << where;
        ASSERT_TRUE(op.chunk >= 0 && op.chunk < shape.chunks) << where;
        auto& seen = op.kind == Kind::kForward ? forward_at : backward_at;
        EXPECT_TRUE(seen.emplace(std::pair{op.micro_batch, op.chunk}, i).second) << where << " op " << i << " twice";
      }
      EXPECT_EQ(forward_at.size(), static_cast<std::size_t>(shape.micro_batches * shape.chunks)) << where;
      EXPECT_EQ(backward_at.size(), forward_at.size()) << where;
      for (const auto& [pair, at] : forward_at) {
        ASSERT_TRUE(backward_at.contains(pair)) << where;
        EXPECT_LT(at, backward_at.at(pair)) << where << " micro-batch " << pair.first << " chunk " << pair.second;
      }
    }
  }
}

TEST(PipelineSchedule, GpipeRunsAllForwardsThenTheBackwardsLastInFirstOut) {
  const auto ranks = pipeline_schedule(PipelineSchedule::kGpipe, 2, 3, 1);
  const std::vector<PipelineOp> expected = {forward(0), forward(1), forward(2), backward(2), backward(1), backward(0)};
  EXPECT_EQ(ranks[0], expected);
  EXPECT_EQ(ranks[1], expected);
}

TEST(PipelineSchedule, OneForwardOneBackwardWarmsUpWithTheStagesAfterIt) {
  // p = 3, m = 4: rank r runs min(p - r - 1, m) forwards before the steady state's first forward-backward pair.
  const auto ranks = pipeline_schedule(PipelineSchedule::kOneForwardOneBackward, 3, 4, 1);
  EXPECT_EQ(ranks[0], (std::vector<PipelineOp>{forward(0), forward(1), forward(2), backward(0), forward(3), backward(1),
                                               backward(2), backward(3)}));
  EXPECT_EQ(ranks[1], (std::vector<PipelineOp>{forward(0), forward(1), backward(0), forward(2), backward(1), forward(3),
                                               backward(2), backward(3)}));
  EXPECT_EQ(ranks[2], (std::vector<PipelineOp>{forward(0), backward(0), forward(1), backward(1), forward(2),
                                               backward(2), forward(3), backward(3)}));
  // m < p: the warm-up is capped at m, so rank 0 runs every forward first.
  const auto short_ranks = pipeline_schedule(PipelineSchedule::kOneForwardOneBackward, 4, 2, 1);
  EXPECT_EQ(short_ranks[0], (std::vector<PipelineOp>{forward(0), forward(1), backward(0), backward(1)}));
}

TEST(PipelineSchedule, InterleavedFollowsMegatronTable) {
  // Megatron-LM's table for p = 2, v = 2, m = 4 (micro-batch groups of p): forward k runs
  // micro-batch 0 1 0 1 2 3 2 3 on chunk 0 0 1 1 0 0 1 1; backward k the same micro-batch on chunk 1 1 0 0 1 1 0 0.
  const auto ranks = pipeline_schedule(PipelineSchedule::kInterleaved, 2, 4, 2);
  // Rank 1: (p - r - 1) * 2 + (v - 1) * p = 2 warm-up forwards.
  EXPECT_EQ(ranks[1], (std::vector<PipelineOp>{forward(0, 0), forward(1, 0), forward(0, 1), backward(0, 1),
                                               forward(1, 1), backward(1, 1), forward(2, 0), backward(0, 0),
                                               forward(3, 0), backward(1, 0), forward(2, 1), backward(2, 1),
                                               forward(3, 1), backward(3, 1), backward(2, 0), backward(3, 0)}));
  // Rank 0: 4 warm-up forwards.
  EXPECT_EQ(ranks[0], (std::vector<PipelineOp>{forward(0, 0), forward(1, 0), forward(0, 1), forward(1, 1),
                                               forward(2, 0), backward(0, 1), forward(3, 0), backward(1, 1),
                                               forward(2, 1), backward(0, 0), forward(3, 1), backward(1, 0),
                                               backward(2, 1), backward(3, 1), backward(2, 0), backward(3, 0)}));
}

TEST(PipelineSchedule, VirtualStagesRunOverTheRanksChunkByChunk) {
  EXPECT_EQ(virtual_stage(0, 0, 4), 0);
  EXPECT_EQ(virtual_stage(3, 0, 4), 3);
  EXPECT_EQ(virtual_stage(0, 1, 4), 4);
  EXPECT_EQ(virtual_stage(1, 2, 4), 9);
}

TEST(PipelineSchedule, PeakInFlightIsMinOfStagesLeftAndMicroBatchesFor1F1BAndMForGpipe) {
  for (const auto& [p, m] : std::vector<std::pair<int, int>>{{1, 1}, {4, 8}, {8, 3}, {6, 6}, {16, 64}}) {
    const auto one_f_one_b = pipeline_schedule(PipelineSchedule::kOneForwardOneBackward, p, m, 1);
    const auto gpipe = pipeline_schedule(PipelineSchedule::kGpipe, p, m, 1);
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(peak_in_flight(one_f_one_b[static_cast<std::size_t>(r)]), std::min(p - r, m))
          << "1f1b p=" << p << " m=" << m << " rank " << r;
      EXPECT_EQ(peak_in_flight(gpipe[static_cast<std::size_t>(r)]), m) << "gpipe p=" << p << " m=" << m;
    }
  }
}

TEST(PipelineSchedule, InterleavedHoldsMoreOnRankZeroThan1F1B) {
  // p = 4, v = 2, m = 8: rank 0 warms up with (p - 1) * 2 + (v - 1) * p = 10 forwards and holds 11 chunks' worth,
  // where 1F1B holds p = 4 micro-batches of twice the layers (the same activations as 8 chunks).
  const auto interleaved = pipeline_schedule(PipelineSchedule::kInterleaved, 4, 8, 2);
  EXPECT_EQ(peak_in_flight(interleaved[0]), 11);
  EXPECT_GT(peak_in_flight(interleaved[0]),
            2 * peak_in_flight(pipeline_schedule(PipelineSchedule::kOneForwardOneBackward, 4, 8, 1)[0]));
  EXPECT_EQ(peak_in_flight(interleaved[3]), 5);  // (v - 1) * p = 4 warm-up forwards, then one more
}

TEST(PipelineSchedule, PeakInFlightIgnoresABackwardWithoutItsForward) {
  EXPECT_EQ(peak_in_flight({backward(0), forward(1), forward(2), backward(1)}), 2);
  EXPECT_EQ(peak_in_flight({}), 0);
}

TEST(PipelineSchedule, RefusesShapesItCannotSchedule) {
  const auto refusal = [](PipelineSchedule schedule, int p, int m, int v) {
    return testing::input_error([&] { pipeline_schedule(schedule, p, m, v); });
  };
  EXPECT_NE(refusal(PipelineSchedule::kGpipe, 0, 4, 1).find("stages must be at least 1"), std::string::npos);
  EXPECT_NE(refusal(PipelineSchedule::kOneForwardOneBackward, 4, 0, 1).find("micro-batches must be at least 1"),
            std::string::npos);
  EXPECT_NE(refusal(PipelineSchedule::kInterleaved, 4, 4, 0).find("chunks per rank must be at least 1"),
            std::string::npos);
  EXPECT_NE(refusal(PipelineSchedule::kOneForwardOneBackward, 4, 8, 2).find("only 'interleaved'"), std::string::npos);
  EXPECT_NE(refusal(PipelineSchedule::kGpipe, 4, 8, 2).find("only 'interleaved'"), std::string::npos);
  const std::string message = refusal(PipelineSchedule::kInterleaved, 4, 6, 2);
  EXPECT_NE(message.find("6 micro-batches is not a multiple of the 4 stages"), std::string::npos) << message;
}

}  // namespace
}  // namespace dsgd::algorithms
