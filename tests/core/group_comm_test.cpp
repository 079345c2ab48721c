// core/group_comm on the threads executor: the collectives of core/collectives.hpp run inside the tensor, pipeline
// and data groups of a 2 x 2 x 2 grid of 8 ranks and give each group's exact sums (core/verifiable.hpp's inputs);
// groups with different tag offsets running at the same time keep their messages apart; a receive from any rank
// names the group rank; the constructor refuses bad member lists; the 3-D layout follows Megatron-LM's formula.

#include "core/group_comm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/collectives.hpp"
#include "core/verifiable.hpp"
#include "measure/threads/executor.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd {
namespace {

using testing::input_error;

constexpr std::size_t kCount = 1001;  // uneven over 2 and 4 ranks: the ring's chunks differ in size

// The sum of verifiable::input_value over the world ranks `members`, element by element.
std::vector<float> group_sums(const std::vector<int>& members) {
  std::vector<float> sums(kCount, 0.0F);
  for (std::size_t i = 0; i < kCount; ++i) {
    for (const int member : members) sums[i] += verifiable::input_value(member, i);
  }
  return sums;
}

WorldResult on_threads(int ranks, const WorkerFunction& worker, int ranks_per_node = 0) {
  WorldOptions world;
  world.size = ranks;
  world.timeout_s = 20;
  world.ranks_per_node = ranks_per_node;
  return measure::threads::run(world, worker);
}

// Every failure a worker saw, for the test's thread to report.
class Failures {
 public:
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    const std::lock_guard lock(mutex_);
    seen_.push_back(what);
  }
  // `actual` equals `expected` exactly (first difference reported).
  void expect_equal(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
    const auto [a, e] = std::mismatch(actual.begin(), actual.end(), expected.begin(), expected.end());
    if (a == actual.end() && e == expected.end()) return;
    const auto i = static_cast<std::size_t>(a - actual.begin());
    expect(false, what + ": element " + std::to_string(i) + " is " +
                      (a == actual.end() ? std::string("missing") : std::to_string(*a)) + ", expected " +
                      (e == expected.end() ? std::string("nothing") : std::to_string(*e)));
  }
  std::string text() const {
    std::string out;
    for (const auto& line : seen_) out += line + "\n";
    return out;
  }
  bool empty() const { return seen_.empty(); }

 private:
  std::mutex mutex_;
  std::vector<std::string> seen_;
};

TEST(CoreGroupComm, GridCoordsAndGroupsFollowMegatronsRankOrder) {
  const Grid3d grid{2, 4, 3};
  ASSERT_EQ(grid.size(), 24);
  for (int rank = 0; rank < grid.size(); ++rank) {
    const GridCoords at = grid_coords(grid, rank);
    EXPECT_EQ(at.tp_index + grid.tp * (at.pp_index + grid.pp * at.dp_index), rank);
    EXPECT_EQ(at, (GridCoords{rank % 2, rank / 2 % 4, rank / 8}));
    EXPECT_EQ(grid_rank(grid, at), rank);
    std::vector<int> tensor, pipeline, data;
    for (int i = 0; i < grid.tp; ++i) tensor.push_back(i + grid.tp * (at.pp_index + grid.pp * at.dp_index));
    for (int i = 0; i < grid.pp; ++i) pipeline.push_back(at.tp_index + grid.tp * (i + grid.pp * at.dp_index));
    for (int i = 0; i < grid.dp; ++i) data.push_back(at.tp_index + grid.tp * (at.pp_index + grid.pp * i));
    EXPECT_EQ(tensor_group(grid, rank), tensor) << "rank " << rank;
    EXPECT_EQ(pipeline_group(grid, rank), pipeline) << "rank " << rank;
    EXPECT_EQ(data_group(grid, rank), data) << "rank " << rank;
  }
  // Spot values: rank 13 = 1 + 2 * (2 + 4 * 1).
  EXPECT_EQ(tensor_group(grid, 13), (std::vector<int>{12, 13}));
  EXPECT_EQ(pipeline_group(grid, 13), (std::vector<int>{9, 11, 13, 15}));
  EXPECT_EQ(data_group(grid, 13), (std::vector<int>{5, 13, 21}));

  EXPECT_NE(input_error([&] { grid_coords(grid, 24); }).find("rank 24 is out of range [0, 24)"), std::string::npos);
  EXPECT_NE(input_error([&] { data_group(grid, -1); }).find("rank -1"), std::string::npos);
  EXPECT_NE(input_error([] { grid_coords({2, 0, 3}, 0); }).find("at least 1"), std::string::npos);
  EXPECT_NE(input_error([&] { grid_rank(grid, {0, 4, 0}); }).find("outside"), std::string::npos);
}

TEST(CoreGroupComm, TagBlocksCoverTagsWithoutOverflow) {
  EXPECT_EQ(group_tag_offset(0), 0);
  EXPECT_EQ(group_tag_offset(1), 2 * kFirstCollectiveTag);
  EXPECT_EQ(kGroupTagBlocks, 1024);
  // The last block ends at the largest tag.
  EXPECT_EQ(group_tag_offset(kGroupTagBlocks - 1) + (kGroupTagSpan - 1), std::numeric_limits<Tag>::max());
  EXPECT_NE(input_error([] { group_tag_offset(kGroupTagBlocks); }).find("out of range [0, 1024)"), std::string::npos);
  EXPECT_NE(input_error([] { group_tag_offset(-1); }).find("block -1"), std::string::npos);
}

// Every rank of a 2 x 2 x 2 grid: allreduce (ring, then recursive doubling) in its tensor group, then in its data
// group, and a broadcast in its pipeline group, each group in its own tag block.
TEST(CoreGroupComm, CollectivesInTheGroupsOfA3dGridGiveEachGroupsSums) {
  const Grid3d grid{2, 2, 2};
  Failures failures;
  on_threads(grid.size(), [&](Comm& world) {
    const int me = world.rank();
    GroupComm tensor(world, tensor_group(grid, me), group_tag_offset(1));
    GroupComm pipeline(world, pipeline_group(grid, me), group_tag_offset(2));
    GroupComm data(world, data_group(grid, me), group_tag_offset(3));
    const GridCoords at = grid_coords(grid, me);
    failures.expect(tensor.rank() == at.tp_index && tensor.size() == 2, "tensor rank");
    failures.expect(pipeline.rank() == at.pp_index && data.rank() == at.dp_index, "pipeline and data ranks");
    for (const auto algorithm : {AllreduceAlgorithm::kRing, AllreduceAlgorithm::kRecursiveDoubling}) {
      const std::string name(to_string(algorithm));
      std::vector<float> buffer = verifiable::inputs(me, kCount);
      allreduce(tensor, {buffer.data(), kCount}, algorithm);
      failures.expect_equal(buffer, group_sums(tensor.members()), "rank " + std::to_string(me) + " tensor " + name);
      // The data group sums the tensor groups' sums: every rank of the grid, counted once per data replica.
      std::vector<int> both;
      for (const int replica : data.members()) {
        for (const int member : tensor_group(grid, replica)) both.push_back(member);
      }
      allreduce(data, {buffer.data(), kCount}, algorithm);
      failures.expect_equal(buffer, group_sums(both), "rank " + std::to_string(me) + " data " + name);
    }
    const int root = 1;  // the last stage
    std::vector<float> staged =
        pipeline.rank() == root ? verifiable::inputs(me, kCount) : std::vector<float>(kCount, -1.0F);
    broadcast(pipeline, {staged.data(), kCount}, root);
    failures.expect_equal(staged, verifiable::inputs(pipeline.members()[root], kCount),
                          "rank " + std::to_string(me) + " pipeline broadcast");
  });
  EXPECT_TRUE(failures.empty()) << failures.text();
}

// Two groups of all 8 ranks, in opposite orders, so every pair of ranks is in both: a rank that finished its
// allreduce in the first already sends in the second while its peers still receive in the first. Their tag blocks
// keep the messages apart. And a world message under the same tag as the groups' collectives, sent before and
// received after, is not taken by them either.
TEST(CoreGroupComm, OverlappingGroupsWithTheirOwnTagBlocksDoNotMixMessages) {
  constexpr int kRanks = 8;
  Failures failures;
  on_threads(kRanks, [&](Comm& world) {
    const int me = world.rank();
    std::vector<int> forward, backward;
    for (int i = 0; i < kRanks; ++i) {
      forward.push_back(i);
      backward.push_back(kRanks - 1 - i);
    }
    GroupComm first(world, forward, group_tag_offset(1));
    GroupComm second(world, backward, group_tag_offset(2));
    const int right = (me + 1) % kRanks, left = (me + kRanks - 1) % kRanks;
    std::vector<float> out = verifiable::inputs(me + 100, kCount), in(kCount);
    auto sent = world.isend(right, kFirstCollectiveTag, out.data(), kCount * sizeof(float), Category::kWait);
    for (int round = 0; round < 3; ++round) {
      for (GroupComm* group : {&first, &second}) {
        std::vector<float> buffer = verifiable::inputs(me, kCount);
        allreduce(*group, {buffer.data(), kCount}, AllreduceAlgorithm::kRing);  // tag kFirstCollectiveTag
        std::vector<float> sums(kCount);
        for (std::size_t i = 0; i < kCount; ++i) sums[i] = verifiable::sum_value(kRanks, i);
        failures.expect_equal(buffer, sums, "rank " + std::to_string(me) + " round " + std::to_string(round));
      }
    }
    world.recv(left, kFirstCollectiveTag, in.data(), kCount * sizeof(float), Category::kWait);
    sent->wait();
    failures.expect_equal(in, verifiable::inputs(left + 100, kCount), "rank " + std::to_string(me) + " world message");
  });
  EXPECT_TRUE(failures.empty()) << failures.text();
}

// A receive from any rank in a group whose ranks are the world's in reverse: the statuses name group ranks and the
// group's tag, and each message came from the world rank its status maps back to.
TEST(CoreGroupComm, AnySourceReceiveNamesTheGroupRank) {
  constexpr int kRanks = 6;
  constexpr Tag kTag = 5;
  Failures failures;
  on_threads(kRanks, [&](Comm& world) {
    std::vector<int> reversed;
    for (int i = 0; i < kRanks; ++i) reversed.push_back(kRanks - 1 - i);
    GroupComm group(world, reversed, group_tag_offset(7));
    failures.expect(group.rank() == kRanks - 1 - world.rank(), "group rank");
    if (group.rank() != 0) {
      const int sender = world.rank();
      const Status status = group.send(0, kTag, &sender, sizeof sender, Category::kWait);
      failures.expect(status.source == 0 && status.tag == kTag, "a send's status names group rank 0 and the tag");
      return;
    }
    std::set<int> sources;
    for (int i = 1; i < kRanks; ++i) {
      int sender = -1;
      const Status status = group.recv(kAnySource, kTag, &sender, sizeof sender, Category::kWait);
      failures.expect(status.tag == kTag && status.bytes == sizeof sender, "status tag and bytes");
      failures.expect(
          status.source >= 1 && status.source < kRanks && reversed[static_cast<std::size_t>(status.source)] == sender,
          "status source " + std::to_string(status.source) + " for a message of world rank " + std::to_string(sender));
      sources.insert(status.source);
    }
    failures.expect(sources.size() == kRanks - 1, "every group rank once");
  });
  EXPECT_TRUE(failures.empty()) << failures.text();
}

// A group inherits the world's node map, so a hierarchical allreduce inside a data group follows it: with 4 ranks
// per node and a 2 x 1 x 4 grid, each data group has two ranks on each of two nodes.
TEST(CoreGroupComm, HierarchicalAllreduceInAGroupFollowsTheParentsNodes) {
  const Grid3d grid{2, 1, 4};
  Failures failures;
  on_threads(
      grid.size(),
      [&](Comm& world) {
        const int me = world.rank();
        GroupComm data(world, data_group(grid, me), group_tag_offset(1));
        for (int i = 0; i < data.size(); ++i) {
          failures.expect(data.node_of(i) == data.members()[static_cast<std::size_t>(i)] / 4, "node_of");
        }
        for (const auto algorithm : {AllreduceAlgorithm::kHierarchical, AllreduceAlgorithm::kHierarchical2d}) {
          std::vector<float> buffer = verifiable::inputs(me, kCount);
          allreduce(data, {buffer.data(), kCount}, algorithm);
          failures.expect_equal(buffer, group_sums(data.members()),
                                "rank " + std::to_string(me) + " " + std::string(to_string(algorithm)));
        }
      },
      /*ranks_per_node=*/4);
  EXPECT_TRUE(failures.empty()) << failures.text();
}

TEST(CoreGroupComm, RefusesBadMemberListsOffsetsPeersAndTags) {
  Failures failures;
  on_threads(4, [&](Comm& world) {
    const int me = world.rank();
    const int other = (me + 1) % 4;
    const auto refused = [&](std::vector<int> members, Tag offset, const std::string& expected) {
      std::string message;
      try {
        GroupComm group(world, std::move(members), offset);
      } catch (const InputError& e) {
        message = e.what();
      }
      failures.expect(message.find(expected) != std::string::npos,
                      "rank " + std::to_string(me) + ": expected '" + expected + "' in '" + message + "'");
    };
    refused({}, 0, "at least one member");
    refused({me, other, me}, 0, "rank " + std::to_string(me) + " is a member twice");
    refused({me, 4}, 0, "member 4 is out of range [0, 4)");
    refused({-1, me}, 0, "member -1 is out of range");
    refused({other}, 0, "does not contain rank " + std::to_string(me));
    refused({me}, 1, "tag offset 1 is not a block");
    refused({me}, kFirstCollectiveTag, "is not a block");
    refused({me}, -kGroupTagSpan, "is not a block");

    GroupComm pair(world, {me, other}, group_tag_offset(1));
    const auto comm_error = [&](const std::function<void()>& action, const std::string& expected) {
      std::string message;
      try {
        action();
      } catch (const CommError& e) {
        message = e.what();
      }
      failures.expect(message.find(expected) != std::string::npos, "expected '" + expected + "' in '" + message + "'");
    };
    float value = 0;
    comm_error([&] { pair.isend(2, 0, &value, sizeof value, Category::kWait); },
               "send to rank 2 is out of range [0, 2)");
    comm_error([&] { pair.irecv(-2, 0, &value, sizeof value, Category::kWait); }, "out of range");
    comm_error([&] { pair.node_of(2); }, "out of range");
    comm_error([&] { pair.isend(1, kGroupTagSpan, &value, sizeof value, Category::kWait); },
               "tag 2097152 is out of a group's range [0, 2097152)");
    comm_error([&] { pair.irecv(1, -1, &value, sizeof value, Category::kWait); }, "receive tag -1");

    // What belongs to the whole world is refused by name; time charged on the group is the parent's too.
    std::string unavailable;
    try {
      pair.shared_vector("weights", 4, {});
    } catch (const UnavailableError& e) {
      unavailable = e.what();
    }
    failures.expect(unavailable.find("a group") != std::string::npos, "shared_vector: " + unavailable);
    unavailable.clear();
    try {
      pair.datagrams({});
    } catch (const UnavailableError& e) {
      unavailable = e.what();
    }
    failures.expect(unavailable.find("a group") != std::string::npos, "datagrams: " + unavailable);
    const double before_s = world.breakdown()[Category::kWait];
    pair.charge(Category::kWait, 0.25);
    failures.expect(world.breakdown()[Category::kWait] == before_s + 0.25 && pair.breakdown()[Category::kWait] == 0.25,
                    "a charge on the group reaches the parent");
    failures.expect(pair.executor() == "threads" && pair.has_payload(), "executor and payload are the parent's");
  });
  EXPECT_TRUE(failures.empty()) << failures.text();
}

}  // namespace
}  // namespace dsgd
