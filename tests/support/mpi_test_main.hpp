#pragma once
// main() of a GoogleTest program that CTest starts under mpirun: every rank runs every test inside one MPI session;
// rank 0 prints GoogleTest's report, the other ranks print only their failures (prefixed by their rank); the
// program fails if any rank failed.

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "measure/mpi/executor.hpp"

namespace dsgd::testing {

inline int run_mpi_tests(int argc, char** argv) {
  measure::mpi::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (session.world_rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    struct FailurePrinter : ::testing::EmptyTestEventListener {
      int rank;
      explicit FailurePrinter(int r) : rank(r) {}
      void OnTestPartResult(const ::testing::TestPartResult& result) override {
        if (result.failed()) {
          std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank, result.file_name() ? result.file_name() : "?",
                       result.line_number(), result.summary());
        }
      }
    };
    listeners.Append(new FailurePrinter(session.world_rank()));
  }
  int result = RUN_ALL_TESTS();
  MPI_Allreduce(MPI_IN_PLACE, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return result;
}

}  // namespace dsgd::testing
