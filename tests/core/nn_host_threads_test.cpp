#include <gtest/gtest.h>
#include <omp.h>

#include <thread>

#include "core/nn/host_threads.hpp"

namespace dsgd::nn {
namespace {

// Two workers of one process each set their own count: one worker's setting must not reach the other's calls.
TEST(NnHostThreads, SetsTheCallingThreadsCountForItsScopeOnly) {
  const int before = omp_get_max_threads();
  {
    const HostThreads scoped(before + 3);
    EXPECT_EQ(omp_get_max_threads(), before + 3);
    int other_thread = 0;
    std::thread([&] { other_thread = omp_get_max_threads(); }).join();
    EXPECT_EQ(other_thread, before);
  }
  EXPECT_EQ(omp_get_max_threads(), before);
}

TEST(NnHostThreads, ACountOfZeroLeavesTheDefault) {
  const int before = omp_get_max_threads();
  const HostThreads scoped(0);
  EXPECT_EQ(omp_get_max_threads(), before);
}

}  // namespace
}  // namespace dsgd::nn
