#pragma once
// Seed 003's comparisons, run natively on this machine: every method to 99.5% closeness on each data set with its
// learning rate and batch size swept (Table IV's speed-up of HogBatch over the best other method, Fig 1's closeness
// curves), time to 99.5% across thread counts (Fig 3), and measured staleness beside Tables I-II. They live here
// because they name methods; `dsgd shared-memory --study NAME` runs one and writes results.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "algorithms/shared_memory/driver.hpp"
#include "core/data/sparse_presets.hpp"
#include "core/linear/optimum.hpp"

namespace dsgd::algorithms::shared_memory {

struct StudyOptions {
  std::vector<std::string> datasets;  // sparse presets, libsvm:FILE, fashion-mnist-binary; empty: the study's own
  data::PresetSize size = data::PresetSize::kReduced;
  int threads = 0;  // 0: every hardware thread
  std::uint64_t seed = 1;
  // A coarse grid keeps the default job minutes long. The alphas are in units of 1 / (the rows' mean squared norm)
  // unless alphas_per_row_norm is false: the data sets' scales differ by a hundredfold (unit-norm text rows, 784
  // pixels), and the best step with them. A step is a sum over the batch, so Mini-Batch wants the small ones.
  SweepGrid grid{{0.01F, 0.1F, 1.0F, 3.0F}, {256, 1024}, {}};
  bool alphas_per_row_norm = true;
  RunOptions run{99.5, 60, 60, false};
};

// One data set's comparison: its optimum, and each method's best run of the sweep.
struct MethodOutcome {
  std::string method;
  SweepResult sweep;
};
struct DatasetOutcome {
  std::string dataset;  // as named in the options
  std::string source;   // what it imitates: "RCV1-v1-test", or "" for a file
  data::SparseStats stats;
  linear::Optimum optimum;
  std::vector<MethodOutcome> methods;
};

// Seed 003 Table IV: HogBatch's speed-up in time to 99.5% over the best of the other methods (Serial, Mini-Batch,
// Hogwild), on the 14-core Haswell.
struct Table4Published {
  std::string preset;            // our preset of the same shape
  std::string best_alternative;  // the method Table IV names
  double speedup = 0;
};
const std::vector<Table4Published>& table4_published();

// The Table IV row of one outcome: HogBatch's time against the fastest of the other plain methods that reached the
// target (speed-up 0 where HogBatch or all of them missed it), and the fastest method of all.
struct Table4Row {
  std::string best_alternative;
  double hogbatch_s = -1;
  double alternative_s = -1;
  double speedup = 0;
  std::string winner;  // the method with the least time to target among all that ran
};
Table4Row table4_row(const DatasetOutcome& outcome);

// The data sets the comparison study runs by default: Table III's seven shapes and binary Fashion-MNIST.
std::vector<std::string> comparison_datasets();
// The methods it compares: every single-model method of the catalog.
std::vector<std::string> comparison_methods();

// Runs the comparison on every data set of `options` (default: comparison_datasets()). Progress lines go to `log`
// (may be null).
std::vector<DatasetOutcome> run_comparison(const StudyOptions& options, std::ostream* log);

// Seed 003 Fig 3 (RCV1-v1-test, 2.6 GHz row): published seconds to 99.5% per method and core count.
struct Fig3Published {
  std::string method;
  int cores = 0;
  double seconds = 0;
};
const std::vector<Fig3Published>& fig3_published();

struct ThreadsOutcome {
  std::string method;
  int threads = 0;
  SweepResult sweep;
};
// The one data set of the threads, staleness and mesh studies: the first of options.datasets, else rcv1-test-like.
std::string study_dataset(const StudyOptions& options);
// The threads study's thread counts unless told otherwise: 1, 2, 4, ... below the hardware threads, then those.
std::vector<int> default_thread_counts();
// Time to 99.5% per method for each thread count of `threads` on the first data set of `options` (default
// rcv1-test-like).
std::vector<ThreadsOutcome> run_threads_study(const StudyOptions& options, const std::vector<int>& threads,
                                              std::ostream* log);

// Staleness of every method's writes: measured in the deterministic lockstep schedule (held to Tables I-II's
// bounds) and on real threads, for T threads and batch S (HogBatch's HS = S / T).
struct StalenessOutcome {
  std::string method;
  std::string schedule;  // "lockstep" or "threads"
  int threads = 0;
  int batch = 0;  // S (mini-batch) or HS (hogbatch), 0 where none
  StalenessHistogram measured;
  StalenessBounds expected;  // the method's bounds in the recorder's convention
  StalenessBounds table1;    // as Table I prints them
  StalenessBounds table2;    // as Table II prints them
};
std::vector<StalenessOutcome> run_staleness_study(const StudyOptions& options, int threads, int batch,
                                                  std::ostream* log);

// What seed 003's many-core prediction needs from the methods (the hardware side is simulate/mesh_sharing.hpp):
// HogBatch's passes to 99.5% with P threads in the lockstep schedule (seed 003's simulator runs equal-speed cores,
// and P = 128 threads cannot run for real here), for HS = S / P and HS = S, and Serial's passes and native speed.
struct MeshConvergence {
  int threads = 0;
  int hog_batch = 0;
  SweepResult sweep;
};
struct MeshConvergenceStudy {
  std::string dataset;
  data::SparseStats stats;
  SweepResult serial;                     // on this machine's thread: its nnz/s is the native rate
  std::vector<MeshConvergence> hogbatch;  // per thread count and HS (S / P and S), lockstep
};
MeshConvergenceStudy run_mesh_convergence(const StudyOptions& options, const std::vector<int>& threads, int batch,
                                          std::ostream* log);

}  // namespace dsgd::algorithms::shared_memory
