#include <gtest/gtest.h>

#include <atomic>
#include <system_error>
#include <thread>

#include "core/stopwatch.hpp"
#include "measure/threads/executor.hpp"
#include "tests/core/collective_checks.hpp"
#include "tests/core/datagram_checks.hpp"

namespace dsgd::measure::threads {
namespace {

struct Case {
  int ranks;
  std::size_t count;
};

class MeasureThreadsCollectives : public ::testing::TestWithParam<Case> {};

TEST_P(MeasureThreadsCollectives, AreExact) {
  const auto [ranks, count] = GetParam();
  WorldOptions options;
  options.size = ranks;
  options.timeout_s = 60;
  run(options, [count = count](Comm& comm) { dsgd::testing::check_collectives(comm, count); });
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const int ranks : {1, 2, 3, 4, 7, 8, 16}) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1001}, std::size_t{262144}}) {
      out.push_back({ranks, count});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(RanksBySizes, MeasureThreadsCollectives, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.ranks) + "ranks_" +
                                  std::to_string(param_info.param.count) + "floats";
                         });

// The world's emulated nodes (WorldOptions::ranks_per_node), uneven ones included, under every collective.
class MeasureThreadsEmulatedNodes : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(MeasureThreadsEmulatedNodes, CollectivesAreExact) {
  const auto [ranks, per_node] = GetParam();
  WorldOptions options;
  options.size = ranks;
  options.ranks_per_node = per_node;
  run(options, [per_node = per_node](Comm& comm) {
    for (int rank = 0; rank < comm.size(); ++rank) {
      if (comm.node_of(rank) != rank / per_node) throw Error("node_of(" + std::to_string(rank) + ") is wrong");
    }
    dsgd::testing::check_collectives(comm, 1001);
  });
}

TEST(MeasureThreadsNodes, NodeMapTextRunsOverConsecutiveRanks) {
  WorldOptions options;
  options.size = 7;
  options.ranks_per_node = 3;
  run(options, [](Comm& comm) {
    if (node_map_text(comm) != "node map 0x3 1x3 2x1") throw Error("node map text: " + node_map_text(comm));
  });
}

INSTANTIATE_TEST_SUITE_P(RanksPerNode, MeasureThreadsEmulatedNodes,
                         ::testing::Values(std::pair{4, 2}, std::pair{7, 3}, std::pair{8, 4}, std::pair{16, 5},
                                           std::pair{16, 8}),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.first) + "ranks_" +
                                  std::to_string(param_info.param.second) + "per_node";
                         });

TEST(MeasureThreadsNodes, AllRanksShareNodeZeroUnlessGrouped) {
  WorldOptions options;
  options.size = 3;
  run(options, [](Comm& comm) {
    for (int rank = 0; rank < comm.size(); ++rank) {
      if (comm.node_of(rank) != 0) throw Error("rank " + std::to_string(rank) + " is not on node 0");
    }
    bool refused = false;
    try {
      comm.node_of(3);
    } catch (const CommError&) {
      refused = true;
    }
    if (!refused) throw Error("node_of(3) of 3 ranks did not throw");
  });
  options.ranks_per_node = -1;
  EXPECT_THROW(run(options, [](Comm&) {}), InputError);
}

WorldOptions two_ranks(double timeout_s) {
  WorldOptions options;
  options.size = 2;
  options.timeout_s = timeout_s;
  return options;
}

std::string failure_of(const WorldOptions& options, const WorkerFunction& worker) {
  try {
    run(options, worker);
  } catch (const CommError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MeasureThreadsErrors, ASilentPeerTimesOutNamingWhoWaitedForWhom) {
  const auto start = std::chrono::steady_clock::now();
  const std::string message = failure_of(two_ranks(0.3), [](Comm& comm) {
    float x = 0;
    if (comm.rank() == 1) comm.recv(0, 7, &x, sizeof x, Category::kNetwork);
  });
  EXPECT_EQ(message, "rank 1 waited 0.3 s for a message from rank 0 (tag 7, 4 bytes)");
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST(MeasureThreadsErrors, SizeMismatchNamesBothSizes) {
  const std::string message = failure_of(two_ranks(10), [](Comm& comm) {
    float data[4] = {1, 2, 3, 4};
    if (comm.rank() == 0) comm.send(1, 3, data, sizeof data, Category::kNetwork);
    if (comm.rank() == 1) comm.recv(0, 3, data, 2 * sizeof(float), Category::kNetwork);
  });
  EXPECT_EQ(message, "rank 1 expected 8 bytes from rank 0 (tag 3) but the message has 16 bytes");
}

TEST(MeasureThreadsErrors, RankOutOfRangeIsACommError) {
  const std::string message = failure_of(two_ranks(10), [](Comm& comm) {
    float x = 0;
    if (comm.rank() == 0) comm.send(2, 0, &x, sizeof x, Category::kNetwork);
  });
  EXPECT_EQ(message, "rank 0: send to rank 2 is out of range [0, 2)");
}

TEST(MeasureThreadsErrors, AFailingWorkerWakesTheOthersAndItsErrorIsRethrown) {
  // Rank 1 waits for a message that rank 0 will never send because it fails first: rank 1 must not sit out
  // its 60 s timeout.
  const auto start = std::chrono::steady_clock::now();
  try {
    run(two_ranks(60), [](Comm& comm) {
      if (comm.rank() == 0) throw InputError("bad hyper-parameter");
      float x = 0;
      comm.recv(0, 1, &x, sizeof x, Category::kNetwork);
    });
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "bad hyper-parameter");
  }
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST(MeasureThreadsComm, KeepsOrderPerSourceAndTagAndMatchesAnySource) {
  WorldOptions options;
  options.size = 3;
  run(options, [](Comm& comm) {
    if (comm.rank() != 0) {
      for (int i = 0; i < 50; ++i) {
        const int value = comm.rank() * 1000 + i;
        comm.send(0, 5, &value, sizeof value, Category::kNetwork);
      }
      return;
    }
    int next[3] = {0, 0, 0};
    for (int i = 0; i < 100; ++i) {
      int value = 0;
      const Status status = comm.recv(kAnySource, 5, &value, sizeof value, Category::kNetwork);
      ASSERT_EQ(value, status.source * 1000 + next[status.source]) << "overtaken";
      ++next[status.source];
    }
  });
}

TEST(MeasureThreadsComm, ChargesTimeToTheStepsCategory) {
  WorldOptions options;
  options.size = 1;
  const auto result = run(options, [](Comm& comm) {
    ComputeStep step;
    step.category = Category::kForwardBackward;
    step.kernel = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
    comm.compute(step);
  });
  EXPECT_GE(result.per_rank[0][Category::kForwardBackward], 0.019);
  EXPECT_EQ(result.per_rank[0][Category::kWait], 0.0);
}

// Natively, work started beside the rank's next steps runs on a thread of its own, at once.
TEST(MeasureThreadsComm, WorkStartedBesideRunsOnAThreadOfItsOwn) {
  WorldOptions options;
  options.size = 1;
  std::thread::id rank_thread;
  std::thread::id work_thread;
  run(options, [&](Comm& comm) {
    rank_thread = std::this_thread::get_id();
    std::atomic<bool> started{false};
    auto beside = comm.start_beside([&] {
      work_thread = std::this_thread::get_id();
      started = true;
    });
    // It starts without a get(): the rank waits for the flag, at most 10 s, so work that never starts fails the
    // thread check below instead of hanging.
    const Stopwatch watch;
    while (!started && watch.elapsed_s() < 10) std::this_thread::yield();
    beside.get();
  });
  EXPECT_NE(work_thread, std::thread::id());
  EXPECT_NE(work_thread, rank_thread);
}

TEST(MeasureThreadsComm, SharedVectorAddsFromEveryWorker) {
  // Each of 4 workers adds 1 to its own quarter: disjoint elements, so no update can be lost.
  WorldOptions options;
  options.size = 4;
  std::atomic<int> checked{0};
  run(options, [&](Comm& comm) {
    const std::vector<float> initial(8, 10.0F);
    auto shared =
        comm.shared_vector("w", 8, comm.rank() == 0 ? std::span<const float>(initial) : std::span<const float>());
    const std::vector<float> ones(2, 1.0F);
    shared->add(static_cast<std::size_t>(2 * comm.rank()), ones, 0.5F, Category::kGpuUpdate);
    // shared_vector is collective, so a second call is a barrier of sorts: after it everyone has added.
    comm.shared_vector("barrier", 1, {});
    std::vector<float> out(8);
    shared->read(0, out, Category::kGpuUpdate);
    for (float v : out) EXPECT_EQ(v, 10.5F);
    ++checked;
  });
  EXPECT_EQ(checked.load(), 4);
}

TEST(MeasureThreadsComm, DatagramsLoseExactlyTheInjectedOnes) {
  WorldOptions options;
  options.size = 3;
  run(options, [](Comm& comm) { testing::check_datagrams_lose_exactly_the_injected(comm, 300); });
}

// --- streams (Comm::start_stream) ------------------------------------------------------------------------------

TEST(MeasureThreadsStream, SumsExactlyBesideItsCallerAndKeepsItsTimeApart) {
  for (const int ranks : {1, 2, 3, 4}) {
    WorldOptions options;
    options.size = ranks;
    std::atomic<int> checked{0};
    run(options, [&](Comm& comm) {
      const StreamResult joined = dsgd::testing::check_stream(comm, 1001, 3);
      // The caller's own gpu-gpu para is its wait in join() alone: the stream's time is the stream's.
      EXPECT_EQ(comm.breakdown()[Category::kGpuGpuPara], joined.joined_s);
      ++checked;
    });
    EXPECT_EQ(checked.load(), ranks);
  }
}

TEST(MeasureThreadsStream, RunsConcurrentlyWithItsCallersCompute) {
  // Each caller's compute step spins until its stream has exchanged a message with the other rank's stream: a
  // stream that ran only at join() would leave the step spinning until it fails.
  WorldOptions options;
  options.size = 2;
  run(options, [](Comm& comm) {
    std::atomic<bool> exchanged{false};
    StreamPtr stream = comm.start_stream([&](Comm& own, StreamPosts& posts) {
      posts.take();
      int mine = own.rank();
      int theirs = -1;
      auto receive = own.irecv(1 - own.rank(), 11, &theirs, sizeof theirs, Category::kGpuGpuPara);
      own.send(1 - own.rank(), 11, &mine, sizeof mine, Category::kGpuGpuPara);
      receive->wait();
      if (theirs != 1 - own.rank()) throw std::runtime_error("wrong message");
      exchanged = true;
    });
    stream->post();
    ComputeStep step;
    step.kernel = [&] {
      const Stopwatch watch;
      while (!exchanged && watch.elapsed_s() < 10) std::this_thread::yield();
      if (!exchanged) throw std::runtime_error("the stream did not run beside the compute step");
    };
    comm.compute(step);
    stream->join(Category::kGpuGpuPara);
  });
}

TEST(MeasureThreadsStream, ACallerThatNeverPostsTimesOutNamingTheStream) {
  const std::string message = failure_of(two_ranks(0.3), [](Comm& comm) {
    StreamPtr stream = comm.start_stream([](Comm&, StreamPosts& posts) { posts.take(); });
    stream->join(Category::kGpuGpuPara);
  });
  EXPECT_TRUE(message == "rank 0 waited 0.3 s in its stream for its caller to post work" ||
              message == "rank 1 waited 0.3 s in its stream for its caller to post work")
      << message;
}

TEST(MeasureThreadsStream, ACallerThatFailsGivesItsStreamUpAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  try {
    run(two_ranks(60), [](Comm& comm) {
      StreamPtr stream = comm.start_stream([](Comm&, StreamPosts& posts) { posts.take(); });
      throw InputError("caller failed");
    });
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "caller failed");
  }
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST(MeasureThreadsExecutor, AThreadThatCannotBeCreatedEndsTheRunWithAnError) {
  // Thread 4 of 8 cannot be created, as when the system is out of threads or memory; the 3 started ones wait for
  // rank 7, which never comes. They must be woken and joined (not std::terminate), and the error must say so.
  WorldOptions options;
  options.size = 8;
  options.timeout_s = 60;
  std::atomic<int> started{0};
  std::atomic<int> woken{0};
  const ThreadStarter failing_fourth = [&started](std::function<void()> body) {
    if (started.load() == 3) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    ++started;
    return std::thread(std::move(body));
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    run(
        options,
        [&woken](Comm& comm) {
          int value = 0;
          try {
            comm.recv(comm.size() - 1, 1, &value, sizeof value, Category::kWait);
          } catch (const CommError&) {
            ++woken;
            throw;
          }
        },
        failing_fourth);
    FAIL() << "expected an UnavailableError";
  } catch (const UnavailableError& e) {
    EXPECT_EQ(std::string(e.what()), "threads executor: cannot create thread 4 of 8: " +
                                         std::make_error_code(std::errc::resource_unavailable_try_again).message());
  }
  EXPECT_EQ(woken.load(), 3) << "expectation: the 3 started threads were woken from their waits and joined";
  EXPECT_LT(seconds_since(start), 10.0) << "expectation: far below the 60 s the waits would last";
}

}  // namespace
}  // namespace dsgd::measure::threads
