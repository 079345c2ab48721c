#pragma once
// Seed 001 Table V: square single-precision GEMM on K80 GPUs, seconds per product ("-" cells left out), the set-up
// `dsgd bench gemm --study table5` predicts on the platform k80-dmath (docs/dmath.md "Table V").

#include <cstdint>
#include <optional>
#include <vector>

namespace dsgd::algorithms::dmath {

struct Table5Row {
  std::int64_t size = 0;
  std::optional<double> cublas_1;    // 1 GPU, a plain cuBLAS 7.5 program
  std::optional<double> dmath_2;     // dMath on 2, 8 and 32 GPUs
  std::optional<double> cublasxt_2;  // cuBLAS-XT 7.5 on 2 and 8 GPUs (one machine only)
  std::optional<double> dmath_8;
  std::optional<double> cublasxt_8;
  std::optional<double> dmath_32;
};

// The table, in the paper's order.
const std::vector<Table5Row>& table5();

// The GPU counts of the table's columns.
inline const std::vector<int> kTable5Gpus = {1, 2, 8, 32};
// The published time of dMath (or, on 1 GPU, cuBLAS) for `size` on `gpus`, and cuBLAS-XT's.
std::optional<double> table5_published(const Table5Row& row, int gpus);
std::optional<double> table5_cublasxt(const Table5Row& row, int gpus);

// The single cell the platform's GPU gemm efficiency is fitted on: cuBLAS on one GPU at this size.
inline constexpr std::int64_t kTable5FitSize = 16384;

}  // namespace dsgd::algorithms::dmath
