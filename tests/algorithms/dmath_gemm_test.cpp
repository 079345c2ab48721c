// Distributed GEMM (algorithms/dmath/): the cyclic and SUMMA products against one single-rank sgemm on the threads
// executor and in SimGrid (numeric), bit-identical across the two; the cache that makes the backward product free
// of messages; the pipeline's overlap in size-only simulation; and the inputs they refuse. MPI:
// tests/app/bench_gemm_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "algorithms/dmath/distributed_gemm.hpp"
#include "algorithms/dmath/gemm_bench.hpp"
#include "measure/threads/executor.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::algorithms::dmath {
namespace {

using testing::input_error;

// A whole matrix of the benchmark's generator, rows x cols.
std::vector<float> matrix(char which, std::int64_t rows, std::int64_t cols) {
  std::vector<float> data(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) data[static_cast<std::size_t>(i * cols + j)] = gemm_element(7, which, i, j);
  }
  return data;
}

// The block rows x cols of a row-major matrix with `width` columns.
std::vector<float> block_of(const std::vector<float>& whole, std::int64_t width, Range rows, Range cols) {
  std::vector<float> block(static_cast<std::size_t>(rows.count * cols.count));
  for (std::int64_t i = 0; i < rows.count; ++i) {
    std::copy_n(whole.begin() + (rows.begin + i) * width + cols.begin, cols.count, block.begin() + i * cols.count);
  }
  return block;
}

// Writes `block` back into its place in `whole`.
void place(std::vector<float>& whole, std::int64_t width, Range rows, Range cols, const std::vector<float>& block) {
  for (std::int64_t i = 0; i < rows.count; ++i)
    std::copy_n(block.begin() + i * cols.count, cols.count, whole.begin() + (rows.begin + i) * width + cols.begin);
}

std::vector<float> single_rank(const GemmShape& shape, const std::vector<float>& a, const std::vector<float>& b,
                               bool transpose_b = false) {
  std::vector<float> c(static_cast<std::size_t>(shape.m * shape.n), 0.0F);
  make_blas_gemm(1)->multiply_add(transpose_b, shape.m, shape.n, shape.k, a.data(), shape.k, b.data(),
                                  transpose_b ? shape.k : shape.n, c.data(), shape.n);
  return c;
}

// max |C - R| / (k max|A| max|B|): at most kGemmErrorBound for any summation order (gemm_bench.hpp).
double relative_error(const std::vector<float>& c, const std::vector<float>& reference, std::int64_t k, double a_max,
                      double b_max) {
  double most = 0;
  for (std::size_t i = 0; i < c.size(); ++i) most = std::max(most, std::fabs(double{c[i]} - double{reference[i]}));
  return most / (static_cast<double>(k) * a_max * b_max);
}

// Runs `worker` on `ranks` ranks; `collect` (in the ranks' process) returns what the caller reads back.
using Executor =
    std::function<std::string(int ranks, const WorkerFunction& worker, const std::function<std::string()>& collect)>;

std::string on_threads_collecting(int ranks, const WorkerFunction& worker, const std::function<std::string()>& collect);

void on_threads(int ranks, const WorkerFunction& worker) { on_threads_collecting(ranks, worker, {}); }

std::string on_threads_collecting(int ranks, const WorkerFunction& worker,
                                  const std::function<std::string()>& collect) {
  WorldOptions world;
  world.size = ranks;
  world.timeout_s = 30;
  measure::threads::run(world, worker);
  return collect ? collect() : "";
}

// Floats as text (hexadecimal, exact) and back: the simulation runs in a child process.
std::string floats_text(const std::vector<float>& values) {
  std::string text;
  char number[32];
  for (const float x : values) {
    std::snprintf(number, sizeof number, "%a ", static_cast<double>(x));
    text += number;
  }
  return text;
}

std::vector<float> floats_of(const std::string& text) {
  std::vector<float> values;
  const char* at = text.c_str();
  char* end = nullptr;
  for (double x = std::strtod(at, &end); end != at; x = std::strtod(at, &end)) {
    values.push_back(static_cast<float>(x));
    at = end;
  }
  return values;
}

// Every rank's result of the benchmark on `ranks` threads.
std::vector<GemmRankResult> bench_on_threads(const GemmBenchOptions& options, int ranks) {
  std::vector<GemmRankResult> results(static_cast<std::size_t>(ranks));
  on_threads(ranks,
             [&](Comm& comm) { results[static_cast<std::size_t>(comm.rank())] = run_gemm_bench(comm, options); });
  return results;
}

// The product C = A B of `algorithm` on `ranks` ranks of `run`, gathered whole.
std::vector<float> distributed(GemmAlgorithm algorithm, const GemmShape& shape, int ranks, const GemmOptions& options,
                               const Executor& run) {
  const auto a = matrix('A', shape.m, shape.k);
  const auto b = matrix('B', shape.k, shape.n);
  std::vector<float> c(static_cast<std::size_t>(shape.m * shape.n), -1.0F);
  std::mutex lock;
  const auto text = run(
      ranks,
      [&](Comm& comm) {
        const LocalBlocks mine = local_blocks(algorithm, shape, comm.size(), comm.rank());
        const auto a_block = block_of(a, shape.k, mine.a_rows, mine.a_cols);
        const auto b_block = block_of(b, shape.n, mine.b_rows, mine.b_cols);
        std::vector<float> c_block(static_cast<std::size_t>(mine.c_rows.count * mine.c_cols.count));
        const auto gemm = make_blas_gemm(1);
        if (algorithm == GemmAlgorithm::kCyclic) {
          cyclic_multiply(comm, shape, a_block, b_block, c_block, *gemm, options);
        } else {
          summa_multiply(comm, shape, a_block, b_block, c_block, *gemm, options);
        }
        const std::lock_guard<std::mutex> guard(lock);
        place(c, shape.n, mine.c_rows, mine.c_cols, c_block);
      },
      [&] { return floats_text(c); });
  return floats_of(text);
}

TEST(DmathGemm, BlocksCoverTheRangeLargestFirst) {
  std::int64_t next = 0;
  for (int part = 0; part < 5; ++part) {
    const Range range = block_range(23, 5, part);
    EXPECT_EQ(range.begin, next);
    EXPECT_LE(range.count, block_range(23, 5, 0).count);
    EXPECT_GE(range.count, 4);
    next = range.begin + range.count;
  }
  EXPECT_EQ(next, 23);
  EXPECT_EQ(square_grid(6).rows, 2);
  EXPECT_EQ(square_grid(6).cols, 3);
  EXPECT_EQ(square_grid(7).rows, 1);
  EXPECT_EQ(square_grid(16).rows, 4);
}

struct Case {
  GemmAlgorithm algorithm;
  int ranks;
  int panels;  // cyclic's panels, SUMMA's panel width
};

class DmathGemmProduct : public ::testing::TestWithParam<Case> {};

TEST_P(DmathGemmProduct, MatchesOneSingleRankSgemmWithinTheBound) {
  const Case test = GetParam();
  const GemmShape shape{37, 29, 41};  // uneven blocks on every rank count
  GemmOptions options;
  options.panels = test.panels;
  options.panel_width = test.panels;
  const auto c = distributed(test.algorithm, shape, test.ranks, options, on_threads_collecting);
  const auto reference = single_rank(shape, matrix('A', shape.m, shape.k), matrix('B', shape.k, shape.n));
  EXPECT_LE(relative_error(c, reference, shape.k, 1, 1), kGemmErrorBound);
  // A block in the wrong place would be off by about one |a b| term: far above the bound.
  EXPECT_GT(kGemmErrorBound, 0);
  EXPECT_LT(kGemmErrorBound, 1.0 / static_cast<double>(shape.k));
}

INSTANTIATE_TEST_SUITE_P(, DmathGemmProduct,
                         ::testing::Values(Case{GemmAlgorithm::kCyclic, 1, 1}, Case{GemmAlgorithm::kCyclic, 2, 1},
                                           Case{GemmAlgorithm::kCyclic, 3, 4}, Case{GemmAlgorithm::kCyclic, 5, 7},
                                           Case{GemmAlgorithm::kSumma, 1, 8}, Case{GemmAlgorithm::kSumma, 2, 5},
                                           Case{GemmAlgorithm::kSumma, 4, 3}, Case{GemmAlgorithm::kSumma, 6, 16}),
                         [](const auto& test) {
                           return std::string(to_string(test.param.algorithm)) + "_" +
                                  std::to_string(test.param.ranks) + "ranks_" + std::to_string(test.param.panels);
                         });

TEST(DmathGemm, TheSimulationComputesTheSameBitsAsThreads) {
  const GemmShape shape{24, 18, 30};
  GemmOptions options;
  options.panels = 3;
  const auto platform = simulate::flat_platform(3, 1e-6, 1e9, 1e10);
  const Executor in_simgrid = [&](int ranks, const WorkerFunction& worker,
                                  const std::function<std::string()>& collect) {
    WorldOptions world;
    world.size = ranks;
    simulate::SimulationOptions simulation;
    simulation.collect = collect;
    return simulate::simgrid::run(platform, world, worker, simulation).collected;
  };
  for (const auto algorithm : {GemmAlgorithm::kCyclic, GemmAlgorithm::kSumma}) {
    const int ranks = algorithm == GemmAlgorithm::kCyclic ? 3 : 2;
    EXPECT_EQ(distributed(algorithm, shape, ranks, options, in_simgrid),
              distributed(algorithm, shape, ranks, options, on_threads_collecting))
        << to_string(algorithm);
  }
}

TEST(DmathGemm, TheKeptBlocksMakeTheTransposedProductFreeOfMessages) {
  const GemmShape shape{20, 16, 12};
  const auto a = matrix('A', shape.m, shape.k);
  const auto b = matrix('B', shape.k, shape.n);
  const auto g = matrix('G', shape.m, shape.n);
  // D = G Bᵀ (m x k), the backward pass of C = A B.
  const auto expected = single_rank({shape.m, shape.k, shape.n}, g, b, true);
  for (const bool keep : {true, false}) {
    std::vector<float> d(static_cast<std::size_t>(shape.m * shape.k));
    std::vector<double> forward_bytes(3);
    std::vector<double> backward_bytes(3);
    on_threads(3, [&](Comm& comm) {
      const auto rank = static_cast<std::size_t>(comm.rank());
      const LocalBlocks mine = local_blocks(GemmAlgorithm::kCyclic, shape, 3, comm.rank());
      const auto a_rows = block_of(a, shape.k, mine.a_rows, mine.a_cols);
      const auto b_rows = block_of(b, shape.n, mine.b_rows, mine.b_cols);
      const auto g_rows = block_of(g, shape.n, mine.c_rows, {0, shape.n});
      std::vector<float> c_rows(static_cast<std::size_t>(mine.c_rows.count * shape.n));
      std::vector<float> d_rows(static_cast<std::size_t>(mine.c_rows.count * shape.k));
      const auto gemm = make_blas_gemm(1);
      BlockCache cache;
      GemmOptions options;
      options.panels = 2;
      cyclic_multiply(comm, shape, a_rows, b_rows, c_rows, *gemm, options, keep ? &cache : nullptr);
      forward_bytes[rank] = static_cast<double>(comm.bytes_sent());
      EXPECT_EQ(cache.full, keep);
      cyclic_multiply_transposed(comm, shape, g_rows, b_rows, d_rows, *gemm, options, keep ? &cache : nullptr);
      backward_bytes[rank] = static_cast<double>(comm.bytes_sent()) - forward_bytes[rank];
      place(d, shape.k, mine.c_rows, {0, shape.k}, d_rows);  // rows of distinct ranks: no overlap
    });
    EXPECT_LE(relative_error(d, expected, shape.n, 1, 1), kGemmErrorBound) << "keep " << keep;
    for (std::size_t rank = 0; rank < 3; ++rank) {
      EXPECT_GT(forward_bytes[rank], 0);
      EXPECT_EQ(backward_bytes[rank], keep ? 0.0 : forward_bytes[rank]) << "keep " << keep << ", rank " << rank;
    }
  }
}

// Size-only simulation on a star whose link moves a block in twice the time of its product, so the rolling bounds
// the product: the transfers overlap the products, and panels let a block be forwarded before all of it arrived.
TEST(DmathGemm, PanelsPipelineTheRollingInSimulation) {
  constexpr int kRanks = 4;
  constexpr double kFlops = 1e9;
  const GemmShape shape{1024, 1024, 1024};
  const double product_s = shape.flops() / kRanks / kRanks / kFlops;  // one block's product on one rank
  const double transfer_s = 2 * product_s;                            // one block over the link
  const double block_bytes = static_cast<double>(shape.k / kRanks * shape.n) * sizeof(float);
  auto platform = simulate::flat_platform(kRanks, 1e-6, block_bytes / transfer_s, kFlops);
  platform.nodes.cpu.efficiency.by_class["gemm"] = 1.0;
  const auto simulated_s = [&](int panels) {
    WorldOptions world;
    world.size = kRanks;
    world.payload = false;
    GemmOptions options;
    options.panels = panels;
    const auto gemm = make_blas_gemm(1);
    return simulate::simgrid::run(platform, world,
                                  [&](Comm& comm) { cyclic_multiply(comm, shape, {}, {}, {}, *gemm, options); })
        .time_s;
  };
  const double one = simulated_s(1);
  const double eight = simulated_s(8);
  // Each link carries three blocks one after the other, which bounds both; with one panel the last product starts
  // only once its whole block is in, with eight panels it follows the last panel (measured: 0.85 s against 0.94 s).
  const double rolling_s = (kRanks - 1) * transfer_s;
  EXPECT_NEAR(one, rolling_s + product_s, 0.02 * one);
  EXPECT_GE(eight, rolling_s);
  EXPECT_LT(eight, one - product_s / 2);
  // Without overlap every product and every transfer would add up.
  EXPECT_LT(one, 0.8 * (kRanks * product_s + rolling_s));
}

// Half-precision transfers: half the bytes on the wire, B's received blocks rounded to fp16 (an error well above
// fp32's bound, within the stated one), the products fp32.
TEST(DmathGemm, HalfPrecisionTransfersHalveTheBytesWithinTheirBound) {
  GemmBenchOptions options;
  options.size = 96;
  options.rounds = 1;
  options.transposed = true;
  const auto full = bench_on_threads(options, 3);
  options.gemm.half_transfer = true;
  const auto half = bench_on_threads(options, 3);
  for (std::size_t rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(half[rank].bytes_sent, full[rank].bytes_sent / 2) << rank;
    const double error = half[rank].max_abs_error / half[rank].error_scale;
    EXPECT_GT(error, kGemmErrorBound) << "rank " << rank << ": the received blocks were not rounded";
    EXPECT_LE(error, kGemmHalfErrorBound) << rank;
    EXPECT_LE(half[rank].transposed_max_abs_error / half[rank].transposed_error_scale, kGemmHalfErrorBound) << rank;
  }
  EXPECT_EQ(gemm_error_bound(options.gemm), kGemmHalfErrorBound);
  options.algorithm = GemmAlgorithm::kSumma;
  options.transposed = false;
  EXPECT_EQ(input_error([&] { check_gemm_bench(options, 2); }),
            "gemm bench: --fp16 transfers are the cyclic algorithm's (SUMMA broadcasts fp32)");
}

TEST(DmathGemm, RefusesWhatCannotBeSplit) {
  GemmBenchOptions options;
  options.size = 3;
  EXPECT_EQ(input_error([&] { check_gemm_bench(options, 4); }),
            "gemm bench: a 3 x 3 product cannot be split over 4 ranks (cyclic)");
  options.size = 64;
  options.algorithm = GemmAlgorithm::kSumma;
  options.transposed = true;
  EXPECT_EQ(input_error([&] { check_gemm_bench(options, 2); }),
            "gemm bench: --transposed needs the cyclic algorithm (SUMMA keeps no blocks for it)");
  EXPECT_EQ(input_error([] { gemm_algorithm_from_string("fox"); }).substr(0, 40),
            "unknown distributed gemm algorithm 'fox'");
  const auto gemm = make_blas_gemm(1);
  std::vector<float> wrong(5);
  EXPECT_EQ(
      input_error([&] {
        on_threads(1, [&](Comm& comm) { cyclic_multiply(comm, {4, 4, 4}, wrong, wrong, wrong, *gemm, GemmOptions{}); });
      }),
      "cyclic gemm: A's row block holds 5 floats, its block needs 16");
}

TEST(DmathGemm, TheBenchChecksItsProductOnEveryRank) {
  GemmBenchOptions options;
  options.size = 64;
  options.rounds = 2;
  options.transposed = true;
  const auto results = bench_on_threads(options, 3);
  for (const auto& rank : results) {
    EXPECT_EQ(rank.product_s.size(), 2U);
    EXPECT_GT(rank.error_scale, 0);
    EXPECT_LE(rank.max_abs_error / rank.error_scale, kGemmErrorBound);
    EXPECT_LE(rank.transposed_max_abs_error / rank.transposed_error_scale, kGemmErrorBound);
    EXPECT_EQ(rank.transposed_bytes_sent, 0);
  }
  EXPECT_EQ(decode_gemm_results(encode(results)).size(), 3U);
  EXPECT_EQ(decode_gemm_results(encode(results))[1].product_s, results[1].product_s);
}

}  // namespace
}  // namespace dsgd::algorithms::dmath
