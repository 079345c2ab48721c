// The MPI executor under real mpirun (CTest starts this executable with 2, 3 and 4 ranks): every collective of
// core/collectives.hpp exact at sizes {0, 1, 1001, 1 MiB}, MPI's own collectives, point-to-point semantics, shared
// vectors, and the failures -- a silent peer, a size mismatch, a rank out of range -- each ending every rank
// cleanly within a short timeout. Each test builds its own MpiComm (a fresh duplicate communicator), so a failed
// test's stray messages cannot match the next test's.
#include "measure/mpi/comm.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>

#include <chrono>
#include <functional>
#include <numeric>
#include <thread>

#include "measure/mpi/executor.hpp"
#include "measure/mpi/leak_check.hpp"
#include "tests/core/collective_checks.hpp"
#include "tests/core/datagram_checks.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/mpi_test_main.hpp"

namespace dsgd::measure::mpi {
namespace {

constexpr double kTimeout_s = 30;      // generous: 4 ranks share 2 cores here
constexpr double kShortTimeout_s = 2;  // for the tests that wait on purpose

WorldOptions options(double timeout_s = kTimeout_s) {
  WorldOptions world;
  world.timeout_s = timeout_s;
  return world;
}

// Blocking and without timeout on purpose: it re-synchronises the ranks after a test that waited on purpose.
void world_barrier() { MPI_Barrier(MPI_COMM_WORLD); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the CommError `action` throws (a failure when it throws none).
std::string comm_error(const std::function<void()>& action) { return testing::error_of<CommError>(action); }

class MeasureMpiCollectives : public ::testing::TestWithParam<std::size_t> {};

TEST_P(MeasureMpiCollectives, EveryCollectiveIsExact) {
  MpiComm comm(MPI_COMM_WORLD, options());
  EXPECT_NO_THROW(testing::check_collectives(comm, GetParam()));
}

std::string size_name(const ::testing::TestParamInfo<std::size_t>& size) {
  return "floats_" + std::to_string(size.param);
}

INSTANTIATE_TEST_SUITE_P(Sizes, MeasureMpiCollectives, ::testing::Values(0, 1, 1001, 262144), size_name);

TEST(MeasureMpiComm, AStreamSumsExactlyOnItsOwnThread) {
  // The session asks for MPI_THREAD_SERIALIZED: the stream then runs on a thread of its own (not at join()), so its
  // time is its own and the caller's gpu-gpu para is its wait in join() alone.
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  ASSERT_GE(level, MPI_THREAD_SERIALIZED);
  MpiComm comm(MPI_COMM_WORLD, options());
  for (const std::size_t count : {std::size_t{0}, std::size_t{1001}, std::size_t{262144}}) {
    const double before = comm.breakdown()[Category::kGpuGpuPara];
    StreamResult joined;
    EXPECT_NO_THROW(joined = testing::check_stream(comm, count, 3)) << count << " floats";
    EXPECT_NEAR(comm.breakdown()[Category::kGpuGpuPara] - before, joined.joined_s, 1e-9) << count << " floats";
  }
}

// mpirun started every rank on this machine: one shared-memory node, node 0.
TEST(MeasureMpiComm, NodesAreTheSharedMemoryNodes) {
  MpiComm comm(MPI_COMM_WORLD, options());
  for (int rank = 0; rank < comm.size(); ++rank) EXPECT_EQ(comm.node_of(rank), 0) << "rank " << rank;
  EXPECT_THROW(comm.node_of(comm.size()), CommError);
}

// An emulated grouping (nodes of 2, the last one short with 3 ranks) under every collective.
TEST(MeasureMpiComm, EmulatedNodesRunEveryCollectiveExactly) {
  WorldOptions world = options();
  world.ranks_per_node = 2;
  MpiComm comm(MPI_COMM_WORLD, world);
  for (int rank = 0; rank < comm.size(); ++rank) EXPECT_EQ(comm.node_of(rank), rank / 2) << "rank " << rank;
  EXPECT_NO_THROW(testing::check_collectives(comm, 1001));
}

TEST(MeasureMpiComm, MpisOwnCollectivesAreExact) {
  MpiComm comm(MPI_COMM_WORLD, options());
  const int n = comm.size();
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1001}}) {
    auto values = testing::inputs(comm.rank(), count);
    mpi_allreduce(comm, {values.data(), count});
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(values[i], testing::sum_value(n, i)) << "allreduce " << i;

    const int root = n - 1;
    values = testing::inputs(comm.rank(), count);
    mpi_reduce(comm, {values.data(), count}, root);
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(values[i], comm.rank() == root ? testing::sum_value(n, i) : testing::input_value(comm.rank(), i));
    }

    values = comm.rank() == root ? testing::inputs(root, count) : std::vector<float>(count, -1.0F);
    mpi_broadcast(comm, {values.data(), count}, root);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(values[i], testing::input_value(root, i));
  }
  EXPECT_GT(comm.breakdown()[Category::kGpuGpuPara], 0.0);
}

TEST(MeasureMpiComm, IdentityClockAndCompute) {
  MpiComm comm(MPI_COMM_WORLD, options());
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  EXPECT_EQ(comm.rank(), world_rank);
  EXPECT_EQ(comm.executor(), "mpi");
  EXPECT_TRUE(comm.has_payload());
  const double before = comm.now_s();
  EXPECT_GE(before, 0.0);
  bool ran = false;
  ComputeStep step;
  step.category = Category::kCpuUpdate;
  step.kernel = [&ran] {
    ran = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  comm.compute(step);
  EXPECT_TRUE(ran);
  EXPECT_GE(comm.breakdown()[Category::kCpuUpdate], 0.004);
  EXPECT_GE(comm.now_s() - before, 0.004);
  comm.barrier();
}

TEST(MeasureMpiComm, KnowsWhenItsNodeIsOversubscribed) {
  // mpirun starts every rank on this one machine; with more of them than CPUs, waits must not spin.
  MpiComm comm(MPI_COMM_WORLD, options());
  EXPECT_EQ(comm.node_ranks(), comm.size());
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(comm.oversubscribed(), comm.size() > CPU_COUNT(&set));
  comm.barrier();
}

TEST(MeasureMpiComm, AskingForAnotherWorldSizeIsAnInputError) {
  WorldOptions world = options();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  world.size = size + 1;
  EXPECT_THROW(MpiComm(MPI_COMM_WORLD, world), InputError);
  world.size = size;
  world.payload = false;
  EXPECT_THROW(MpiComm(MPI_COMM_WORLD, world), InputError);
}

TEST(MeasureMpiComm, AnySourceReportsTheSenderAndOrderIsKept) {
  MpiComm comm(MPI_COMM_WORLD, options());
  const int n = comm.size();
  constexpr int kMessages = 5;
  if (comm.rank() == 0) {
    std::vector<int> next(static_cast<std::size_t>(n), 0);  // per sender, the sequence number expected next
    for (int received = 0; received < kMessages * (n - 1); ++received) {
      int payload[2] = {-1, -1};
      const Status status = comm.recv(kAnySource, 3, payload, sizeof payload, Category::kNetwork);
      ASSERT_EQ(status.source, payload[0]);
      ASSERT_EQ(status.tag, 3);
      ASSERT_EQ(status.bytes, sizeof payload);
      // Non-overtaking: from one sender, in the order sent.
      ASSERT_EQ(payload[1], next[static_cast<std::size_t>(status.source)]++);
    }
  } else {
    for (int i = 0; i < kMessages; ++i) {
      int payload[2] = {comm.rank(), i};
      comm.send(0, 3, payload, sizeof payload, Category::kNetwork);
    }
  }
  comm.barrier();
}

TEST(MeasureMpiComm, MessagesGoToTheEarliestPostedReceiveWhateverTheWaitOrder) {
  MpiComm comm(MPI_COMM_WORLD, options());
  if (comm.rank() == 0) {
    int first = 0;
    int second = 0;
    int third = 0;
    auto any = comm.irecv(kAnySource, 9, &first, sizeof first, Category::kNetwork);
    auto specific = comm.irecv(1, 9, &second, sizeof second, Category::kNetwork);
    auto last = comm.irecv(1, 9, &third, sizeof third, Category::kNetwork);
    // Waited in reverse: MPI's rule still gives the first message to the receive posted first.
    EXPECT_EQ(last->wait().source, 1);
    EXPECT_EQ(specific->wait().source, 1);
    EXPECT_EQ(any->wait().source, 1);
    EXPECT_EQ(first, 100);
    EXPECT_EQ(second, 101);
    EXPECT_EQ(third, 102);
  } else if (comm.rank() == 1) {
    for (int value : {100, 101, 102}) comm.send(0, 9, &value, sizeof value, Category::kNetwork);
  }
  comm.barrier();
}

TEST(MeasureMpiComm, DatagramsOverUdpLoseExactlyTheInjectedOnes) {
  MpiComm comm(MPI_COMM_WORLD, options());
  testing::check_datagrams_lose_exactly_the_injected(comm, 300);
  world_barrier();
}

TEST(MeasureMpiComm, SharedVectorAddsAreNeverLost) {
  MpiComm comm(MPI_COMM_WORLD, options());
  constexpr std::size_t kCount = 1000;
  constexpr int kAdds = 50;
  std::vector<float> initial(kCount);
  std::iota(initial.begin(), initial.end(), 0.0F);
  auto shared = comm.shared_vector("weights", kCount, comm.rank() == 0 ? initial : std::vector<float>{});
  ASSERT_EQ(shared->size(), kCount);
  std::vector<float> seen(kCount);
  shared->read(0, seen, Category::kCpuGpuPara);
  // Before anyone adds (no one does until the barrier below), everyone sees rank 0's initial values.
  EXPECT_EQ(seen, initial);
  comm.barrier();
  const std::vector<float> ones(kCount, 1.0F);
  for (int i = 0; i < kAdds; ++i) shared->add(0, ones, 0.5F, Category::kCpuUpdate);
  comm.barrier();
  shared->read(0, seen, Category::kCpuGpuPara);
  // MPI_Accumulate is element-atomic: all size x kAdds x 0.5 arrive (exact in float for these small values).
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(seen[i], initial[i] + 0.5F * kAdds * static_cast<float>(comm.size())) << "element " << i;
  }
  EXPECT_THROW(shared->read(kCount - 1, std::span<float>(seen.data(), 2), Category::kCpuGpuPara), CommError);
  comm.barrier();
}

TEST(MeasureMpiComm, SharedVectorOfDifferentCountsIsAnErrorOnEveryRank) {
  MpiComm comm(MPI_COMM_WORLD, options());
  const std::size_t count = comm.rank() == 0 ? 10 : 11;
  try {
    comm.shared_vector("mismatch", count, {});
    ADD_FAILURE() << "no error";
  } catch (const CommError& e) {
    EXPECT_TRUE(contains(e.what(), "between 10 and 11")) << e.what();
  }
}

TEST(MeasureMpiComm, PeerThatNeverSendsTimesOutNamingBothRanks) {
  MpiComm comm(MPI_COMM_WORLD, options(kShortTimeout_s));
  if (comm.rank() == 1) {
    std::vector<std::byte> buffer(4096);
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.recv(0, 7, buffer.data(), buffer.size(), Category::kNetwork);
      ADD_FAILURE() << "the receive returned";
    } catch (const TimeoutError& e) {
      EXPECT_STREQ(e.what(), "rank 1 waited 2 s for a message from rank 0 (tag 7, 4096 bytes)");
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(waited, kShortTimeout_s);
    EXPECT_LT(waited, kShortTimeout_s + 3);
    EXPECT_GE(comm.breakdown()[Category::kNetwork], kShortTimeout_s);
  }
  // Rank 0, the silent peer, just returns; everyone meets here.
  world_barrier();
}

TEST(MeasureMpiComm, SendNobodyReceivesTimesOut) {
  MpiComm comm(MPI_COMM_WORLD, options(kShortTimeout_s));
  constexpr std::size_t kBytes = 1 << 20;  // above the eager limit: the send waits for the receiver
  std::vector<std::byte> buffer(kBytes);
  if (comm.rank() == 0) {
    try {
      comm.send(1, 8, buffer.data(), kBytes, Category::kNetwork);
      ADD_FAILURE() << "the send returned";
    } catch (const TimeoutError& e) {
      EXPECT_STREQ(e.what(), "rank 0 waited 2 s for rank 1 to receive a message (tag 8, 1048576 bytes)");
    }
  }
  world_barrier();
  // The send could not be cancelled (Open MPI never cancels sends); the late receiver still gets it, so nothing is
  // left pending.
  if (comm.rank() == 1) comm.recv(0, 8, buffer.data(), kBytes, Category::kNetwork);
  world_barrier();
}

TEST(MeasureMpiComm, SizeMismatchNamesBothSizes) {
  MpiComm comm(MPI_COMM_WORLD, options());
  if (comm.rank() == 0) {
    const std::uint64_t eight = 8;
    const std::uint32_t four = 4;
    comm.send(1, 3, &eight, sizeof eight, Category::kNetwork);
    comm.send(1, 4, &four, sizeof four, Category::kNetwork);
    std::vector<std::byte> large(1 << 20);
    comm.send(1, 5, large.data(), large.size(), Category::kNetwork);
  } else if (comm.rank() == 1) {
    std::uint32_t small = 0;
    EXPECT_EQ(comm_error([&] { comm.recv(0, 3, &small, sizeof small, Category::kNetwork); }),
              "rank 1 expected 4 bytes from rank 0 (tag 3) but the message has 8 bytes");
    std::uint64_t big = 0;
    EXPECT_EQ(comm_error([&] { comm.recv(0, 4, &big, sizeof big, Category::kNetwork); }),
              "rank 1 expected 8 bytes from rank 0 (tag 4) but the message has 4 bytes");
    // Above the eager limit too, and without writing past the buffer (Open MPI's CMA rendezvous would, had the
    // receive been posted with the declared size); nor may the sender be left waiting.
    std::vector<std::byte> half((1 << 19) + 64, std::byte{7});
    EXPECT_EQ(comm_error([&] { comm.recv(0, 5, half.data(), 1 << 19, Category::kNetwork); }),
              "rank 1 expected 524288 bytes from rank 0 (tag 5) but the message has 1048576 bytes");
    for (std::size_t i = 0; i < half.size(); ++i) ASSERT_EQ(half[i], std::byte{7}) << "byte " << i << " was written";
  }
  comm.barrier();
}

TEST(MeasureMpiComm, BadPeersTagsAndBuffersAreCommErrors) {
  MpiComm comm(MPI_COMM_WORLD, options());
  int value = 0;
  const int n = comm.size();
  EXPECT_EQ(comm_error([&] { comm.isend(n, 1, &value, sizeof value, Category::kNetwork); }),
            "rank " + std::to_string(comm.rank()) + ": send to rank " + std::to_string(n) + " is out of range [0, " +
                std::to_string(n) + ")");
  EXPECT_THROW(comm.irecv(-2, 1, &value, sizeof value, Category::kNetwork), CommError);
  EXPECT_THROW(comm.isend(kAnySource, 1, &value, sizeof value, Category::kNetwork), CommError);
  EXPECT_THROW(comm.isend(0, -1, &value, sizeof value, Category::kNetwork), CommError);
  EXPECT_THROW(comm.isend(0, 1, nullptr, 4, Category::kNetwork), CommError);
  EXPECT_THROW(comm.irecv(0, 1, nullptr, 4, Category::kNetwork), CommError);
  float one = 1;
  EXPECT_THROW(mpi_broadcast(comm, {&one, 1}, n), CommError);
  comm.barrier();
}

TEST(MeasureMpiExecutor, RunReturnsEveryRanksBreakdown) {
  const auto result = run(options(), [](Comm& comm) {
    std::vector<float> values = testing::inputs(comm.rank(), 100);
    allreduce(comm, {values.data(), values.size()}, AllreduceAlgorithm::kRing);
    testing::expect_values(comm, "ring", values, [&] {
      std::vector<float> sums(100);
      for (std::size_t i = 0; i < sums.size(); ++i) sums[i] = testing::sum_value(comm.size(), i);
      return sums;
    }());
  });
  EXPECT_GT(result.wall_s, 0.0);
  EXPECT_GE(result.time_s, result.wall_s) << "the slowest rank's time";
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_EQ(result.per_rank.size(), static_cast<std::size_t>(size)) << "every rank's breakdown, on every rank";
  for (const auto& breakdown : result.per_rank) EXPECT_GT(breakdown[Category::kGpuGpuPara], 0.0);
}

}  // namespace
}  // namespace dsgd::measure::mpi

// One MPI session for all tests. Rank 0 prints the usual report; the others print only their failures. Every rank
// returns the worst result, so mpirun's exit code says whether any rank failed.
int main(int argc, char** argv) { return dsgd::testing::run_mpi_tests(argc, argv); }
