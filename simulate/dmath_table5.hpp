#pragma once
// Seed 001 Table V predicted: every cell of the distributed GEMM's time (cyclic, kept blocks where they fit) on a
// platform of K80s (k80-dmath), beside the published dMath and cuBLAS times, with one efficiency (docs/dmath.md
// "Table V"). `dsgd bench gemm --study table5` prints it.

#include <string>

#include "algorithms/dmath/gemm_bench.hpp"
#include "platforms/platform.hpp"
#include "reports/results.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

// One point of the distributed GEMM benchmark simulated size-only: every block product a compute step of class
// "gemm" at the platform's rate, every panel a message.
reports::Entry simulate_gemm_point(const platforms::Platform& platform, const PlacementOptions& placement,
                                   const algorithms::dmath::GemmBenchOptions& options, int ranks, double timeout_s);

struct Table5Study {
  std::string platform;
  int gpus_per_server = 0;
  // The one efficiency the table is predicted with: the platform's kernel-model efficiency of its GPU (FITTED by
  // `dsgd simulate --study k80`), or, for a device without a kernel model, a `gemm` class efficiency FITTED here so
  // that one GPU takes cuBLAS's published time at algorithms::dmath::kTable5FitSize (whose cell is then "fitted").
  double efficiency = 0;
  std::string efficiency_parameter;
  std::string fitted_on;
  bool fitted_here = false;
  // An entry "gemm-table5/fitted/gemm_efficiency" (labels kind "fitted", parameter, fitted_on), then one per cell
  // (kind "point"; role predicted, fitted or "does not fit"; counters gpus, predicted_, published_ seconds,
  // GFLOP/s and speed-up, diff_percent, cublasxt_seconds; labels size, kept_blocks, published_by, note).
  reports::Results results;
};

// Throws InputError for a platform without GPUs or too few of them for 32.
Table5Study predict_table5(const std::string& platform_name, int ranks_per_node, double timeout_s);

}  // namespace dsgd::simulate
