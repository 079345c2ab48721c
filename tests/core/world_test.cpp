#include "core/world.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace dsgd {
namespace {

std::string world_error(const WorldOptions& world, std::string_view executor, bool simulated) {
  try {
    check_world(world, executor, simulated);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CoreWorld, OneWordingForABadWorldOnEveryExecutor) {
  WorldOptions empty;
  empty.size = 0;
  EXPECT_EQ(world_error(empty, "threads", false), "threads executor: a world needs at least 1 rank, got 0");
  EXPECT_EQ(world_error(empty, "simgrid", true), "simgrid executor: a world needs at least 1 rank, got 0");
  WorldOptions no_time;
  no_time.timeout_s = 0;
  EXPECT_EQ(world_error(no_time, "mpi", false), "mpi executor: the timeout must be positive and finite, got 0 s");
  EXPECT_EQ(world_error(no_time, "simgrid", true),
            "simgrid executor: the timeout must be positive (or infinite), got 0 s");
  WorldOptions forever;
  forever.timeout_s = std::numeric_limits<double>::infinity();
  EXPECT_EQ(world_error(forever, "simgrid", true), "");
  EXPECT_NE(world_error(forever, "threads", false), "");
  WorldOptions size_only;
  size_only.payload = false;
  EXPECT_EQ(world_error(size_only, "threads", false),
            "threads executor: size-only worlds (payload = false) exist only in simulation");
  EXPECT_EQ(world_error(size_only, "simgrid", true), "");
}

TEST(CoreWorld, FirstFailureKeepsTheFirstOfManyThreads) {
  FirstFailure failure;
  EXPECT_FALSE(failure);
  EXPECT_NO_THROW(failure.rethrow_if_any());
  EXPECT_TRUE(failure.record(3, std::make_exception_ptr(CommError("the cause"))));
  std::vector<std::thread> echoes;
  for (int rank = 0; rank < 4; ++rank) {
    echoes.emplace_back([&failure, rank] {
      EXPECT_FALSE(failure.record(rank, std::make_exception_ptr(std::runtime_error("an echo"))));
    });
  }
  for (auto& echo : echoes) echo.join();
  EXPECT_TRUE(failure);
  EXPECT_EQ(failure.rank(), 3);
  EXPECT_EQ(exception_text(failure.error()), "the cause");
  EXPECT_THROW(failure.rethrow_if_any(), CommError);
  EXPECT_EQ(exception_text(std::make_exception_ptr(42)), "unknown exception");
}

}  // namespace
}  // namespace dsgd
