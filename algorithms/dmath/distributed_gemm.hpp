#pragma once
// Distributed single-precision GEMM over the communication interface (core/comm.hpp), seed 001 (dMath) §III:
// C = A B with the matrices split over the ranks of a world, so it runs unchanged on threads, on OpenMPI and in
// SimGrid (size-only: each block product is a compute step of its FLOPs). Two algorithms, docs/dmath.md:
//
//  * cyclic (dMath's variant of Fox's algorithm): a 1-D split, rank r holding row block r of A, of B and of C.
//    B's row blocks roll around the ring of ranks (rank r sends to r - 1), P outer stages; each block travels as
//    `panels` column panels, and each panel's transfer is started before the GEMM of the panel before it, so the
//    transfers overlap the products (pipelined asynchronous rolling, no broadcast) into a second buffer (double
//    buffering). With a BlockCache the blocks a rank has seen stay with it (dMath's "keep what you've seen"): a
//    later product with the same B -- the backward pass D = G Bᵀ of a fully-connected layer -- needs no messages.
//  * summa (van de Geijn and Watts' SUMMA): a 2-D grid of rows x cols ranks, each holding one block of A, B and C;
//    for each panel of the inner dimension its owners broadcast (binomial tree) A's panel along their grid row and
//    B's panel along their grid column, then every rank adds the panel product. Not pipelined: the comparison
//    dMath draws against broadcast-based algorithms.
//
// Matrices are row-major floats. Blocks are split as core/collectives.hpp's shard_of splits a range (sizes differ
// by at most one). On a Comm without payloads every span may be empty: messages and compute steps keep their sizes.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/comm.hpp"

namespace dsgd::algorithms::dmath {

enum class GemmAlgorithm { kCyclic, kSumma };
std::string_view to_string(GemmAlgorithm algorithm);
// "cyclic" or "summa"; UnknownNameError otherwise.
GemmAlgorithm gemm_algorithm_from_string(std::string_view name);

// C is m x n, A m x k, B k x n.
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

// [begin, begin + count) of `extent` split into `parts` nearly equal ranges, range `index`.
struct Range {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};
Range block_range(std::int64_t extent, int parts, int index);

// The rank grid of SUMMA: rows x cols = P, as square as P allows (rows <= cols).
struct Grid {
  int rows = 1;
  int cols = 1;
};
Grid square_grid(int ranks);

// A rank's local product: C (m x n, leading dimension ldc) += A (m x k, lda) op(B), op(B) = B (k x n, ldb) or, with
// transpose_b, Bᵀ for B stored n x k. Host memory. Implementations: OpenBLAS (make_blas_gemm).
class LocalGemm {
 public:
  virtual ~LocalGemm() = default;
  virtual void multiply_add(bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                            std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc) = 0;
  virtual std::string description() const = 0;
};
// OpenBLAS's cblas_sgemm on `threads` OpenMP threads of the calling thread (1: one core per rank).
std::unique_ptr<LocalGemm> make_blas_gemm(int threads);

struct GemmOptions {
  int panels = 4;                  // cyclic: column panels per rolled block (the pipeline's inner stages)
  std::int64_t panel_width = 256;  // summa: columns of the inner dimension per broadcast step
  Tag tag = 100;                   // first tag; the cyclic algorithm uses panels tags from it, SUMMA two
  // cyclic: B's panels travel as IEEE half precision (seed 001 sec. IX), widened to fp32 on arrival; half the bytes,
  // and B's received blocks rounded to 11 significant bits (gemm_bench.hpp kGemmHalfErrorBound).
  bool half_transfer = false;
  Category compute_category = Category::kForwardBackward;
  Category transfer_category = Category::kGpuGpuPara;
};

// The B blocks a rank has received (dMath's replication): filled by cyclic_multiply, read by
// cyclic_multiply_transposed. Holds all of B (k x n floats) once full; forget() when B changes.
struct BlockCache {
  std::vector<std::vector<float>> blocks;  // by block index, in the panel layout of `panels` panels (docs/dmath.md)
  int panels = 0;
  bool full = false;  // every block seen (also on a Comm without payloads, where blocks stay empty)
  void forget() {
    blocks.clear();
    full = false;
  }
};

// One local product of an algorithm as a compute step of class "gemm" (its FLOPs and memory traffic, charged to
// options.compute_category): `gemm` runs it where the Comm carries payloads, arguments as LocalGemm::multiply_add.
void block_product(Comm& comm, const GemmOptions& options, bool transpose_b, std::int64_t m, std::int64_t n,
                   std::int64_t k, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
                   std::int64_t ldc, LocalGemm& gemm);

// Cyclic, forward: c_rows (this rank's row block of C, m_r x n) = a_rows (m_r x k) B, where b_rows is this rank's
// row block of B (k_r x n). With a cache, every block is kept and the cache is full afterwards.
void cyclic_multiply(Comm& comm, const GemmShape& shape, std::span<const float> a_rows, std::span<const float> b_rows,
                     std::span<float> c_rows, LocalGemm& gemm, const GemmOptions& options, BlockCache* cache = nullptr);
// Cyclic, backward: d_rows (m_r x k) = g_rows (m_r x n) Bᵀ for the same distributed B (k x n). From a full cache
// without any message; otherwise B rolls around the ring again.
void cyclic_multiply_transposed(Comm& comm, const GemmShape& shape, std::span<const float> g_rows,
                                std::span<const float> b_rows, std::span<float> d_rows, LocalGemm& gemm,
                                const GemmOptions& options, BlockCache* cache = nullptr);

// SUMMA on square_grid(P): rank r at grid (r / cols, r % cols) holds A's block (m split by rows, k split by cols),
// B's block (k split by rows, n split by cols) and C's block (m by rows, n by cols); c_block = its block of A B.
void summa_multiply(Comm& comm, const GemmShape& shape, std::span<const float> a_block, std::span<const float> b_block,
                    std::span<float> c_block, LocalGemm& gemm, const GemmOptions& options);

// The blocks a rank holds under an algorithm's layout, as ranges of rows and columns of each matrix.
struct LocalBlocks {
  Range a_rows, a_cols, b_rows, b_cols, c_rows, c_cols;
};
LocalBlocks local_blocks(GemmAlgorithm algorithm, const GemmShape& shape, int ranks, int rank);

}  // namespace dsgd::algorithms::dmath
