// The waiting-share microbenchmark (measure/waiting_share.hpp) on the threads executor: rank 0 waits while the
// others compute, and what it took of a core is its thread's CPU time over the wait.
#include "measure/waiting_share.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "measure/threads/executor.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::measure {
namespace {

TEST(MeasureWaitingShare, ASleepingThreadTakesAlmostNothing) {
  const WaitingShare measured = threads_waiting_share(3, 0.3);
  EXPECT_EQ(measured.computing, 2);
  EXPECT_GE(measured.wall_s, 0.3);
  EXPECT_GE(measured.cpu_s, 0.0);
  EXPECT_GT(measured.computing_cpu_s, 0.0);
  // The threads executor's receive sleeps on a condition variable: a few wake-ups, not a share of a core. Held
  // against what a computing rank got meanwhile, not against the wall time, so other programs on the machine
  // (which slow both) cannot fail it.
  EXPECT_LT(measured.cpu_s, 0.05 * measured.computing_cpu_s)
      << measured.cpu_s << " s of CPU waiting, " << measured.computing_cpu_s << " s computing, in " << measured.wall_s
      << " s";
}

TEST(MeasureWaitingShare, TheCpuClocksAdvanceWhileComputing) {
  const double thread_start = thread_cpu_seconds();
  const double process_start = process_cpu_seconds();
  volatile double sink = 1;
  for (int i = 0; i < 20000000; ++i) sink = sink * 1.0000001 + 1e-9;
  EXPECT_GT(thread_cpu_seconds(), thread_start);
  EXPECT_GE(process_cpu_seconds() - process_start, thread_cpu_seconds() - thread_start - 0.02);
}

TEST(MeasureWaitingShare, RefusesOneRankAndNoTime) {
  EXPECT_EQ(testing::error_of<InputError>([] { threads_waiting_share(1, 0.1); }),
            "waiting share: needs at least 2 ranks (one waits, the others compute), got 1");
  EXPECT_EQ(testing::error_of<InputError>([] { threads_waiting_share(2, 0); }),
            "waiting share: the compute time must be > 0 seconds");
}

}  // namespace
}  // namespace dsgd::measure
