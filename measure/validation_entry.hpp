#pragma once
// The results entry of one row of `dsgd validate` (docs/validation.md): the first repetition's run, with every
// repetition's measured and predicted seconds per iteration, the median run's numbers, and the measured and
// predicted breakdown of a worker per steady iteration side by side. How the runs are measured and summed up is
// validation.hpp's; the prediction's seconds and breakdown come in as numbers (measure/ never includes simulate/).

#include <cstdint>
#include <string>

#include "core/breakdown.hpp"
#include "measure/validation.hpp"
#include "reports/results.hpp"

namespace dsgd::measure {

// A run's steady seconds per iteration (steady_seconds_per_iteration above), from its accuracy curves' points at
// the end of each round. Throws InternalError if the run has no such curves of two rounds or more.
double steady_seconds_per_iteration(const reports::Entry& run);

// How a row's runs were run.
struct RowShape {
  int repetitions = 1;
  std::int64_t warmup_iterations = 0;  // per worker: each run's first round, not measured
  std::int64_t iterations = 0;         // per worker and run, the warm-up included
  bool file_kernels = false;           // no kernels timed around the runs (RunPolicy::file_kernels)
};

// Repetition `index` (from 0) of a row into its entry: the first's run becomes the entry, a later one's breakdowns
// are added to it (breakdown_s and first_round_s become sums over the repetitions); its measured and predicted
// seconds per iteration; and the predicted breakdown of a worker (`predicted_worker`, seconds per category over
// the run; none: nothing predicted) per iteration, as a mean over the repetitions.
void add_repetition(reports::Entry& entry, int index, reports::Entry run, const RunMeasurement& measured,
                    double predicted_s, const Breakdown* predicted_worker, const RowShape& shape);

// The row's numbers once every repetition is in: the median run's measured and predicted seconds, its error, the
// spread, the others' busy cores and the kernels' drift, `prediction` (how it was predicted, in words), and the
// measured breakdown per iteration after the warm-up rounds.
void finish_row(reports::Entry& entry, const RowRuns& runs, const RowShape& shape, const std::string& prediction);

}  // namespace dsgd::measure
