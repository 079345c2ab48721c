// What the distributed GEMM algorithms share: names, block ranges, the grid, the layouts and the local product.

#include "algorithms/dmath/distributed_gemm.hpp"

#include <cblas.h>

#include <array>
#include <cmath>

#include "core/nn/host_threads.hpp"

namespace dsgd::algorithms::dmath {

namespace {

constexpr std::array<std::string_view, 2> kNames = {"cyclic", "summa"};

// A rank's thread count set around its OpenBLAS calls only (core/nn/host_threads.hpp).
class BlasGemm : public LocalGemm {
 public:
  explicit BlasGemm(int threads) : threads_(threads) {}

  void multiply_add(bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                    const float* b, std::int64_t ldb, float* c, std::int64_t ldc) override {
    if (m == 0 || n == 0 || k == 0) return;
    const nn::HostThreads threads(threads_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), 1.0F, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), 1.0F, c, static_cast<blasint>(ldc));
  }

  std::string description() const override {
    return std::string("OpenBLAS ") + openblas_get_config() + " sgemm, " + std::to_string(threads_) +
           (threads_ == 1 ? " thread" : " threads");
  }

 private:
  int threads_;
};

}  // namespace

std::string_view to_string(GemmAlgorithm algorithm) { return kNames[static_cast<std::size_t>(algorithm)]; }

GemmAlgorithm gemm_algorithm_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<GemmAlgorithm>(i);
  }
  throw UnknownNameError("distributed gemm algorithm", name, {kNames.begin(), kNames.end()});
}

Range block_range(std::int64_t extent, int parts, int index) {
  if (parts < 1 || index < 0 || index >= parts) {
    throw InternalError("block_range: index " + std::to_string(index) + " of " + std::to_string(parts) + " parts");
  }
  // The first extent % parts ranges hold one more: block 0 is always a largest one.
  const std::int64_t base = extent / parts;
  const std::int64_t extra = extent % parts;
  return {index * base + std::min<std::int64_t>(index, extra), base + (index < extra ? 1 : 0)};
}

Grid square_grid(int ranks) {
  if (ranks < 1) throw InputError("square_grid: " + std::to_string(ranks) + " ranks");
  int rows = static_cast<int>(std::sqrt(static_cast<double>(ranks)));
  while (rows > 1 && ranks % rows != 0) --rows;
  return {rows, ranks / rows};
}

LocalBlocks local_blocks(GemmAlgorithm algorithm, const GemmShape& shape, int ranks, int rank) {
  if (algorithm == GemmAlgorithm::kCyclic) {
    const Range m = block_range(shape.m, ranks, rank);
    const Range k = block_range(shape.k, ranks, rank);
    return {m, {0, shape.k}, k, {0, shape.n}, m, {0, shape.n}};
  }
  const Grid grid = square_grid(ranks);
  const int row = rank / grid.cols;
  const int col = rank % grid.cols;
  const Range m = block_range(shape.m, grid.rows, row);
  const Range n = block_range(shape.n, grid.cols, col);
  return {m, block_range(shape.k, grid.cols, col), block_range(shape.k, grid.rows, row), n, m, n};
}

void block_product(Comm& comm, const GemmOptions& options, bool transpose_b, std::int64_t m, std::int64_t n,
                   std::int64_t k, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
                   std::int64_t ldc, LocalGemm& gemm) {
  ComputeStep step;
  step.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  step.bytes = static_cast<double>(sizeof(float)) * static_cast<double>(m * k + k * n + 2 * m * n);
  step.kernel_class = "gemm";
  step.category = options.compute_category;
  // Its shape, for a processor priced by shape (a thin block fills fewer of a GPU's units than a square one).
  LayerKernel shape;
  shape.gemm = dsgd::GemmShape{m, n, k, 1};
  shape.flops = step.flops;
  shape.bytes = step.bytes;
  step.kernels = {&shape, 1};
  if (comm.has_payload()) {
    step.kernel = [&, transpose_b, m, n, k, a, lda, b, ldb, c, ldc] {
      gemm.multiply_add(transpose_b, m, n, k, a, lda, b, ldb, c, ldc);
    };
  }
  comm.compute(step);
}

std::unique_ptr<LocalGemm> make_blas_gemm(int threads) {
  if (threads < 1) throw InputError("gemm: threads per rank must be at least 1, got " + std::to_string(threads));
  return std::make_unique<BlasGemm>(threads);
}

}  // namespace dsgd::algorithms::dmath
