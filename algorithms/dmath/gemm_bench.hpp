#pragma once
// The distributed GEMM benchmark every executor runs (`dsgd bench gemm`, `dsgd-mpi gemm`; docs/dmath.md): square
// products of seed 001 Table V's kind, each rank generating its blocks from a seed, timed products started
// together, and each rank's block of C checked against one single-rank sgemm of the same rows and columns.

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/dmath/distributed_gemm.hpp"
#include "algorithms/memory_estimate.hpp"

namespace dsgd::algorithms::dmath {

struct GemmBenchOptions {
  GemmAlgorithm algorithm = GemmAlgorithm::kCyclic;
  std::int64_t size = 2048;  // m = n = k
  int rounds = 3;            // timed products, after one untimed warm-up
  GemmOptions gemm;
  int threads_per_rank = 1;  // OpenBLAS threads of each rank's local products
  bool verify = true;        // check the product (needs payloads)
  bool cache = true;         // cyclic: keep the rotated blocks (BlockCache)
  bool transposed = false;   // cyclic: after each product also time D = C Bᵀ (from the cache when kept)
  std::uint64_t seed = 1;
};

// What one rank measured.
struct GemmRankResult {
  std::vector<double> product_s;     // each timed product, this rank's seconds
  std::vector<double> transposed_s;  // each timed transposed product (GemmBenchOptions::transposed)
  double bytes_sent = 0;             // by this rank in one product (its transposed product's not counted)
  double transposed_bytes_sent = 0;  // in one transposed product: 0 from a full cache
  // |C - R| at most, R the single-rank sgemm (0 without verify), and its scale k max|A| max|B|; likewise for D.
  double max_abs_error = 0;
  double error_scale = 0;
  double transposed_max_abs_error = 0;
  double transposed_error_scale = 0;
};

// The bound the check holds each rank to: |C - R| <= kGemmErrorBound x k max|A| max|B|. Each of C and R is an fp32
// sum of k products in some order, so each is within gamma_k sum |a b| <= 1.01 k u max|A| max|B| of the exact value
// (u = 2^-24, for k u < 0.01), and they differ by at most twice that.
inline constexpr double kGemmErrorBound = 2.02 * 0x1p-24;
// With half-precision transfers (GemmOptions::half_transfer) each received element of B is also rounded to the
// nearest half: off by at most 2^-11 |b| + 2^-25 (half a subnormal step), so for operands of magnitude at most 1 with
// max|B| >= 1/2 the bound grows by 2^-11 + 2^-24.
inline constexpr double kGemmHalfErrorBound = kGemmErrorBound + 0x1p-11 + 0x1p-24;
// The bound that holds for `options`.
double gemm_error_bound(const GemmOptions& options);

// Element (i, j) of operand `which` ('A' or 'B') of the benchmark's matrices for `seed`, uniform in [-1, 1).
float gemm_element(std::uint64_t seed, char which, std::int64_t i, std::int64_t j);

// Throws InputError for options a world of `ranks` ranks cannot run (before anything starts).
void check_gemm_bench(const GemmBenchOptions& options, int ranks);

// One rank's part: its blocks, a warm-up, `rounds` timed products (a one-float allreduce before each starts them
// together), then the check. On a Comm without payloads only the timings are real (simulated).
GemmRankResult run_gemm_bench(Comm& comm, const GemmBenchOptions& options);

// Seconds of single-rank products of the whole options.size-square matrices of options.seed by OpenBLAS on `threads`
// threads of the calling thread: one untimed warm-up, then at least `products`, more until `min_total_s` has passed.
// The reference `dsgd bench gemm` prints beside the distributed product, and `dsgd bench roofline`'s sgemm.
std::vector<double> time_whole_sgemm(const GemmBenchOptions& options, int threads, int products,
                                     double min_total_s = 0);

// The memory a world of `ranks` ranks of this benchmark takes on one machine, all ranks together.
MemoryEstimate estimate_gemm_bench_memory(const GemmBenchOptions& options, int ranks);

// Rank results as text and back, for results that cross a process boundary (a forked simulation, dsgd-mpi).
std::string encode(const std::vector<GemmRankResult>& ranks);
std::vector<GemmRankResult> decode_gemm_results(const std::string& text);

// Every rank's result on rank 0 (messages on `comm`, which must carry payloads); other ranks get an empty vector.
std::vector<GemmRankResult> gather_gemm_results(Comm& comm, const GemmRankResult& mine);

}  // namespace dsgd::algorithms::dmath
