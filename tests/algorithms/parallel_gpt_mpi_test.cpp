// algorithms/parallel_gpt under real mpirun (CTest starts this program with 4 ranks): a 2 x 2 x 1 grid and a
// 1 x 2 x 2 grid with ZeRO-1 train the tiny GPT for five steps, and every rank's weights are bit for bit those of
// the same grid on the threads executor, which rank 0 runs in-process.

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "measure/mpi/executor.hpp"
#include "measure/threads/executor.hpp"
#include "tests/algorithms/parallel_gpt_runs.hpp"
#include "tests/support/mpi_test_main.hpp"

namespace dsgd::algorithms {
namespace {

using namespace testing::parallel_gpt;

void expect_threads_bits(const ParallelGptOptions& run) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_EQ(size, run.grid.size()) << "run this program with mpirun -np " << run.grid.size();
  WorldOptions world;
  world.timeout_s = 60;
  Gathered on_mpi;
  measure::mpi::run(world, [&](Comm& comm) { run_parallel_gpt(comm, run, tokens, gathering(on_mpi, comm, true)); });
  std::uint64_t mine = on_mpi.rank_hashes.at(rank);
  std::vector<std::uint64_t> hashes(static_cast<std::size_t>(size));
  MPI_Gather(&mine, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  WorldOptions threads_world;
  threads_world.size = size;
  threads_world.timeout_s = 60;
  Gathered on_threads;
  measure::threads::run(threads_world,
                        [&](Comm& comm) { run_parallel_gpt(comm, run, tokens, gathering(on_threads, comm, true)); });
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(hashes[static_cast<std::size_t>(r)], on_threads.rank_hashes.at(r)) << "rank " << r;
}

TEST(ParallelGptMpi, TensorAndPipelineParallelGiveTheThreadsBits) {
  auto run = options({2, 2, 1}, 4);
  run.iterations = 5;
  expect_threads_bits(run);
}

TEST(ParallelGptMpi, PipelineAndShardedDataParallelGiveTheThreadsBits) {
  auto run = options({1, 2, 2}, 2);
  run.iterations = 5;
  run.zero_stage = 1;
  run.schedule = PipelineSchedule::kInterleaved;
  run.virtual_stages = 2;
  expect_threads_bits(run);
}

}  // namespace
}  // namespace dsgd::algorithms

int main(int argc, char** argv) { return dsgd::testing::run_mpi_tests(argc, argv); }
