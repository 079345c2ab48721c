#pragma once
// Seed 003's "future scalability" study: HogBatch on its simulated 64- and 128-core 2-D mesh. The methods' side
// (passes to 99.5% per thread count and HS, in the lockstep schedule; serial SGD's native speed) comes from
// algorithms/shared_memory/studies.hpp, the chip's side from mesh_sharing.hpp; this puts them together and builds
// the results entries (docs/shared-memory-mesh.md).

#include <ostream>
#include <string>
#include <vector>

#include "algorithms/shared_memory/studies.hpp"
#include "reports/results.hpp"
#include "simulate/mesh_sharing.hpp"

namespace dsgd::simulate {

struct MeshStudyOptions {
  std::vector<int> cores{1, 2, 4, 8, 16, 32, 64, 128};
  int batch = 1024;                     // S; HogBatch's HS = S / cores and S
  double in_order_penalty = 2;          // assumed (CoreRate)
  double write_cycles_per_feature = 2;  // assumed (SharingPattern)
  double native_clock_Hz = 0;           // this machine's clock, which the measured serial rate ran at
};

// The faster HS of one core count.
struct MeshStudyRow {
  MeshSpeedup point;
  int hog_batch = 0;
};

struct MeshStudyOutcome {
  std::string dataset;
  MeshStudyOptions options;
  double serial_passes_to_target = 0;
  double native_nnz_per_s = 0;     // serial SGD on one thread of this machine
  double seconds_per_nnz = 0;      // on a simulated core
  std::vector<MeshStudyRow> rows;  // by core count, ascending
};

// Runs the methods' convergence (`study`'s data set and limits), then predicts each (P, HS) on its own and keeps the
// faster HS per P, as seed 003 keeps the best of its sweep. A (P, HS) that did not reach 99.5% is left out with a
// line on `log` (may be null). Throws Error if serial SGD did not reach 99.5%, InputError for bad options.
MeshStudyOutcome run_mesh_study(const algorithms::shared_memory::StudyOptions& study, const MeshStudyOptions& options,
                                std::ostream* log);

// One simulated entry per core count, with seed 003's published speed-up at 64 and 128 cores.
std::vector<reports::Entry> to_entries(const MeshStudyOutcome& outcome);

}  // namespace dsgd::simulate
