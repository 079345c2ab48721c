#pragma once
// Runs a shared-memory method to seed 003's target -- closeness (2 - |F| / |F*|) x 100 >= 99.5% -- pass by pass,
// and sweeps learning rate and batch size keeping the best run, as seed 003 does ("learning rate and batch size are
// sweeped and only the best result is presented").

#include <optional>
#include <vector>

#include "algorithms/shared_memory/method.hpp"
#include "algorithms/shared_memory/staleness.hpp"
#include "core/linear/logistic.hpp"

namespace dsgd::algorithms::shared_memory {

struct RunOptions {
  double target_percent = 99.5;  // stop at this closeness
  int max_passes = 100;          // or after this many passes
  double max_seconds = 300;      // or once training (not evaluation) has taken this long
  bool record_staleness = false;
};

struct PassPoint {
  int pass = 0;             // 1-based
  double seconds = 0;       // training time up to the end of this pass (evaluation excluded)
  double pass_seconds = 0;  // this pass alone
  double objective = 0;     // F after the pass; the mean over models for multi-model
  double closeness_percent = 0;
};

struct ConvergenceResult {
  std::vector<PassPoint> curve;
  double time_to_target_s = -1;  // -1: the target was not reached
  int passes_to_target = -1;
  bool diverged = false;  // the objective became NaN or infinite (the step is too large)
  int threads = 0;
  double nnz_per_s_per_thread = 0;              // non-zeros processed (nnz x passes) / training seconds / threads
  std::optional<StalenessHistogram> staleness;  // with RunOptions::record_staleness
  std::vector<std::vector<float>> weights;      // the final model, one vector of `features` floats per model
};

// Trains `method` with `options` on `problem` from w = 0, pass k with step alpha / sqrt(k), until closeness to
// `optimal` (F*, > 0) reaches the target or a limit; evaluates F after every pass outside the timed region. For
// multi-model the objective is the mean over models of F with each model's task labels, and `optimal` the mean of
// their optima. Throws InputError for bad options or limits (optimal <= 0, max_passes < 1, max_seconds <= 0).
ConvergenceResult run_to_closeness(const MethodEntry& method, const linear::Problem& problem, double optimal,
                                   const MethodOptions& options, const RunOptions& run = {});

// The values a sweep tries. Empty `hog_batches` means: for every S in `batches`, {S / T, S / 4, S / 2, S} (>= 1).
struct SweepGrid {
  std::vector<float> alphas = {0.03F, 0.1F, 0.3F, 1.0F, 3.0F, 10.0F, 30.0F};
  std::vector<int> batches = {100, 256, 1024, 4096};  // Mini-Batch's S
  std::vector<int> hog_batches;                       // HogBatch's HS
};

struct SweepPoint {
  MethodOptions options;
  ConvergenceResult result;
};

struct SweepResult {
  bool reached = false;         // some run reached the target
  SweepPoint best;              // least time to target, ties to fewer passes; with none reached, the highest closeness
  std::vector<SweepPoint> all;  // every run, in grid order (curves kept, weights dropped)
};

// Runs `method` for every alpha of the grid and every batch size of the kind the method uses (BatchOption), the
// other options from `base`. A run stops early once its training time exceeds the best time so far, since it can no
// longer win. Throws InputError for an empty alpha list or a batch list the method needs that is empty.
SweepResult sweep(const MethodEntry& method, const linear::Problem& problem, double optimal, const MethodOptions& base,
                  const SweepGrid& grid = {}, const RunOptions& run = {});

}  // namespace dsgd::algorithms::shared_memory
