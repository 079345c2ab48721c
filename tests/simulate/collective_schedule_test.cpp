// simulate/collective_schedule: the steps derived from the collectives' point-to-point code are the textbook
// ones, and bodies that cannot be scheduled (any-source receives, shared vectors, mismatched messages) are refused
// with a message naming the collective.

#include "simulate/collective_schedule.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/collectives.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

const CollectiveCall kCall{"test collective", "count 4", Category::kGpuGpuPara};

CollectiveSchedule schedule_of(int ranks, const std::function<void(Comm&)>& body) {
  return record_schedule(kCall, ranks, body);
}

std::size_t compute_count(const CollectiveSchedule& schedule) {
  std::size_t count = 0;
  for (const auto& step : schedule.steps) count += step.computes.size();
  return count;
}

TEST(CollectiveSchedule, BinomialBroadcastHasLog2PStepsAndPMinusOneTransfers) {
  const auto schedule = schedule_of(8, [](Comm& comm) { broadcast(comm, {nullptr, 1000}, 0); });
  ASSERT_EQ(schedule.steps.size(), 3U);
  EXPECT_EQ(schedule.steps[0].transfers.size(), 1U);  // 0 -> 4
  EXPECT_EQ(schedule.steps[1].transfers.size(), 2U);  // 0 -> 2, 4 -> 6
  EXPECT_EQ(schedule.steps[2].transfers.size(), 4U);
  EXPECT_EQ(schedule.steps[0].transfers[0].source, 0);
  EXPECT_EQ(schedule.steps[0].transfers[0].destination, 4);
  EXPECT_EQ(schedule.steps[0].transfers[0].bytes, 4000U);
  EXPECT_EQ(compute_count(schedule), 0U);
  // The root sends in all three steps; rank 4 receives in step 0 and sends in steps 1 and 2; rank 7 receives last.
  EXPECT_EQ(schedule.leave_after[0], 3);
  EXPECT_EQ(schedule.leave_after[4], 3);
  EXPECT_EQ(schedule.leave_after[1], 3);
  EXPECT_EQ(schedule.leave_after[6], 3);
}

TEST(CollectiveSchedule, BinomialReduceAlternatesTransfersAndSums) {
  const auto schedule = schedule_of(8, [](Comm& comm) { reduce(comm, {nullptr, 1000}, 0); });
  ASSERT_EQ(schedule.steps.size(), 6U);  // transfer, sum, transfer, sum, transfer, sum
  for (std::size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(schedule.steps[k].transfers.empty(), k % 2 == 1) << "step " << k;
    EXPECT_EQ(schedule.steps[k].computes.empty(), k % 2 == 0) << "step " << k;
  }
  EXPECT_EQ(schedule.transfer_count(), 7U);
  EXPECT_EQ(schedule.steps[5].computes.size(), 1U);
  EXPECT_EQ(schedule.steps[5].computes[0].rank, 0);
  EXPECT_EQ(schedule.steps[5].computes[0].flops, 1000);
  EXPECT_EQ(schedule.steps[5].computes[0].kernel_class, "elementwise");
  EXPECT_EQ(schedule.leave_after[1], 1);  // a leaf leaves once its send ended
  EXPECT_EQ(schedule.leave_after[0], 6);  // the root after the last sum
}

TEST(CollectiveSchedule, RingAllreduceHasTwoPMinusOneExchangeSteps) {
  const auto schedule = schedule_of(4, [](Comm& comm) { allreduce(comm, {nullptr, 1000}, AllreduceAlgorithm::kRing); });
  EXPECT_EQ(schedule.steps.size(), 3U * 2 + 3);  // reduce-scatter: exchange + sum; allgather: exchange
  EXPECT_EQ(schedule.transfer_count(), 4U * 6);
  EXPECT_EQ(compute_count(schedule), 4U * 3);
  for (const auto& step : schedule.steps) {
    if (step.transfers.empty()) continue;
    EXPECT_EQ(step.transfers.size(), 4U);  // every rank sends to its right neighbour at once
    for (const auto& transfer : step.transfers) EXPECT_EQ(transfer.destination, (transfer.source + 1) % 4);
  }
}

// Two nodes of 4: a binomial reduce in each node (3 transfers), a ring of the 2 leaders (2 x 2 transfers), a binomial
// broadcast in each node (3); only the leaders' ring crosses nodes.
TEST(CollectiveSchedule, HierarchicalAllreduceFollowsTheNodeMap) {
  const std::vector<int> nodes = {0, 0, 0, 0, 1, 1, 1, 1};
  const auto schedule = record_schedule(
      kCall, 8,
      [](Comm& comm) {
        allreduce(comm, {nullptr, 1000}, AllreduceAlgorithm::kHierarchical);
      },
      nodes);
  EXPECT_EQ(schedule.transfer_count(), 2U * 3 + 4 + 2U * 3);
  std::size_t crossing = 0;
  for (const auto& step : schedule.steps) {
    for (const auto& transfer : step.transfers) {
      if (nodes[static_cast<std::size_t>(transfer.source)] == nodes[static_cast<std::size_t>(transfer.destination)]) {
        continue;
      }
      ++crossing;
      EXPECT_TRUE((transfer.source == 0 && transfer.destination == 4) ||
                  (transfer.source == 4 && transfer.destination == 0));
      EXPECT_EQ(transfer.bytes, 2000U);  // half the buffer: a ring of two
    }
  }
  EXPECT_EQ(crossing, 4U);
  // All on one node: reduce and broadcast over 8 ranks, nothing else.
  const auto one_node = record_schedule(kCall, 8, [](Comm& comm) {
    allreduce(comm, {nullptr, 1000}, AllreduceAlgorithm::kHierarchical);
  });
  EXPECT_EQ(one_node.transfer_count(), 7U + 7U);
}

// Two nodes of 4: a ring reduce-scatter and allgather in each node (4 x 3 transfers each), then 4 rings of two
// across the nodes, one per local rank, each on its quarter of the buffer.
TEST(CollectiveSchedule, Hierarchical2dRunsOneRingPerLocalRankAcrossNodes) {
  const std::vector<int> nodes = {0, 0, 0, 0, 1, 1, 1, 1};
  const auto schedule = record_schedule(
      kCall, 8,
      [](Comm& comm) {
        allreduce(comm, {nullptr, 1000}, AllreduceAlgorithm::kHierarchical2d);
      },
      nodes);
  EXPECT_EQ(schedule.transfer_count(), 2U * (4 * 3 * 2) + 4U * 4);
  std::size_t crossing = 0;
  for (const auto& step : schedule.steps) {
    for (const auto& transfer : step.transfers) {
      if (transfer.source / 4 == transfer.destination / 4) continue;
      ++crossing;
      EXPECT_EQ(transfer.destination % 4, transfer.source % 4);  // local rank i talks to local rank i
      EXPECT_EQ(transfer.bytes, 500U);                           // half of a quarter
    }
  }
  EXPECT_EQ(crossing, 16U);
}

TEST(CollectiveSchedule, OneRankHasNoSteps) {
  const auto schedule = schedule_of(1, [](Comm& comm) { broadcast(comm, {nullptr, 10}, 0); });
  EXPECT_TRUE(schedule.steps.empty());
  EXPECT_EQ(schedule.leave_after.at(0), 0);
}

TEST(CollectiveSchedule, AnySourceIsUnavailable) {
  const std::string message = testing::error_of<UnavailableError>([] {
    schedule_of(2, [](Comm& comm) {
      if (comm.rank() == 0) comm.recv(kAnySource, 1, nullptr, 4, Category::kNetwork);
      if (comm.rank() == 1) comm.send(0, 1, nullptr, 4, Category::kNetwork);
    });
  });
  EXPECT_NE(message.find("test collective (count 4) receives from any source on rank 0"), std::string::npos) << message;
}

// Issue 42: a recursive-doubling allreduce on 10 million ranks recorded 6 GB of operations before it reached the
// limit. A sample of ranks is recorded first, and the whole is refused before a single rank is kept.
TEST(CollectiveSchedule, ACollectiveFarOverTheLimitIsRefusedFromASample) {
  int bodies_run = 0;
  const std::string message = testing::error_of<UnavailableError>([&] {
    schedule_of(10'000'000, [&](Comm& comm) {
      ++bodies_run;
      allreduce(comm, {nullptr, 2}, AllreduceAlgorithm::kRecursiveDoubling);
    });
  });
  EXPECT_LE(bodies_run, 64) << "only the sample was recorded";
  EXPECT_TRUE(message.starts_with("test collective (count 4) on 10000000 ranks has about ")) << message;
  EXPECT_NE(message.find("point-to-point operations ("), std::string::npos) << message;
  EXPECT_NE(message.find("simulate it at the message level"), std::string::npos) << message;
  // Past a power of two half the folded ranks only hand over their data: the sample's mean, not its busiest rank,
  // scales to the world, so a world that fits is still recorded (1,000 ranks: under the limit either way).
  EXPECT_NO_THROW(schedule_of(1000, [](Comm& comm) {
    allreduce(comm, {nullptr, 2}, AllreduceAlgorithm::kRecursiveDoubling);
  }));
}

TEST(CollectiveSchedule, SharedVectorIsUnavailable) {
  EXPECT_THROW(schedule_of(2, [](Comm& comm) { comm.shared_vector("w", 4, {}); }), UnavailableError);
}

TEST(CollectiveSchedule, SizeMismatchIsCommErrorNamingBothSizes) {
  const std::string message = testing::error_of<CommError>([] {
    schedule_of(2, [](Comm& comm) {
      if (comm.rank() == 0) comm.send(1, 3, nullptr, 8, Category::kNetwork);
      if (comm.rank() == 1) comm.recv(0, 3, nullptr, 16, Category::kNetwork);
    });
  });
  EXPECT_NE(message.find("test collective (count 4) on 2 ranks"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 expected 16 bytes from rank 0 (tag 3) but the message has 8 bytes"), std::string::npos)
      << message;
}

TEST(CollectiveSchedule, WaitNobodyMatchesIsCommError) {
  const std::string message = testing::error_of<CommError>([] {
    schedule_of(2, [](Comm& comm) {
      if (comm.rank() == 0) comm.send(1, 3, nullptr, 8, Category::kNetwork);
    });
  });
  EXPECT_NE(message.find("never completes: rank 0 waits for a transfer nobody matches"), std::string::npos) << message;
}

}  // namespace
}  // namespace dsgd::simulate
