#pragma once
// Lasso problems for STRADS (seed 003; docs/strads.md): minimise
//   F(beta) = 1/2 |y - X beta|^2 + lambda |beta|_1
// over beta in R^M, X with N rows (samples) and M columns (features). Columns are scaled to unit L2 norm (STRADS's
// and Shotgun's convention), so a coordinate's exact minimiser is a soft threshold of x_a . r + beta_a, and
// |x_a . x_b| is the correlation the dynamic scheduler's dependency graph thresholds (uncentred; the generated
// columns have mean zero). X is stored by columns (CSC): coordinate descent reads a column at a time.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace dsgd::algorithms::strads {

struct LassoProblem {
  std::string name;
  std::size_t rows = 0;                     // N
  std::size_t features = 0;                 // M
  std::vector<std::uint64_t> column_begin;  // M + 1 offsets into row/value
  std::vector<std::uint32_t> row;           // row indices, increasing within a column
  std::vector<float> value;                 // the non-zeros, each column of unit norm (an empty column stays empty)
  std::vector<float> y;                     // N targets

  std::size_t nnz() const { return value.size(); }
  std::span<const std::uint32_t> column_rows(std::size_t a) const {
    return {row.data() + column_begin[a], row.data() + column_begin[a + 1]};
  }
  std::span<const float> column_values(std::size_t a) const {
    return {value.data() + column_begin[a], value.data() + column_begin[a + 1]};
  }
};

// The shape of a generated problem, after the STRADS paper's synthetic Lasso: features in groups whose columns are
// correlated by `correlation` (the same latent column plus independent noise, on a shared support of `density` of
// the rows), a sparse true beta (`nonzeros` entries of +-1, at most one per group first), y = X beta* + noise.
struct LassoShape {
  std::size_t rows = 1000;
  std::size_t features = 1000;
  std::size_t group = 10;     // columns per correlated group (1: independent columns)
  double correlation = 0.5;   // within a group, in [0, 1)
  double density = 1.0;       // share of rows a group's columns are non-zero on, in (0, 1]
  std::size_t nonzeros = 20;  // of beta*
  double noise = 0.1;         // standard deviation of y's noise
  std::uint64_t seed = 1;
};

// Named shapes: "tiny" (tests), "small", "correlated" (groups of 20 at 0.95: where Shotgun breaks), "large".
LassoShape lasso_preset(const std::string& name);
std::vector<std::string> lasso_preset_names();

// Generates the problem of `shape`. Throws InputError for an impossible shape (no rows or features, a correlation
// outside [0, 1), a density outside (0, 1], more nonzeros than features) or one whose memory would not fit.
LassoProblem generate_lasso(const LassoShape& shape, const std::string& name = "generated");

// A problem by name: a preset, "preset:SEED" (another seed), or "libsvm:FILE" (a LIBSVM regression file: real
// labels, columns scaled to unit norm).
LassoProblem load_lasso(const std::string& spec);

// Writes `problem` as a LIBSVM regression file (labels and values in the shortest form that reads back exactly), for
// an independent solver (scripts/lasso_reference.py). Refuses to replace anything but a regular file.
void write_lasso_libsvm(const LassoProblem& problem, const std::filesystem::path& path);

// lambda_max = max_a |x_a . y|: the smallest lambda whose minimiser is beta = 0.
double lambda_max(const LassoProblem& problem);

// F(beta) in double.
double lasso_objective(const LassoProblem& problem, std::span<const double> beta, double lambda);

// The soft-threshold operator S(z, lambda) = sign(z) max(|z| - lambda, 0).
inline double soft_threshold(double z, double lambda) {
  return z > lambda ? z - lambda : (z < -lambda ? z + lambda : 0.0);
}

// x_a . x_b over the whole column (a sparse merge).
double column_dot(const LassoProblem& problem, std::size_t a, std::size_t b);

// The rows [begin, end) of `problem` as a problem of their own (a worker's shard): columns keep their global
// scaling, so the shards' partial sums add up to the whole.
LassoProblem row_shard(const LassoProblem& problem, std::size_t begin, std::size_t end);

}  // namespace dsgd::algorithms::strads
