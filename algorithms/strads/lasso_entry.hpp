#pragma once
// The results entries of STRADS Lasso runs (lasso.hpp), on any executor: one run's curve (objective against time
// and rounds), final objective, updates and how its scheduler spread them; and, across the runs of one problem, the
// time to within a gap of the best objective and the speed-up over the baselines the STRADS paper compares with.

#include <string>
#include <vector>

#include "algorithms/strads/lasso.hpp"
#include "reports/results.hpp"

namespace dsgd::algorithms::strads {

// The entry of one run of `options` on `workers` workers (name "lasso/SCHEDULER/PROBLEM/WORKERS").
reports::Entry to_entry(const LassoRunOptions& options, const LassoProblem& problem, const LassoRunResult& result,
                        const std::string& executor, int workers);

// Across `runs` (to_entry's, at least one) of one problem: counters best_objective_of_runs, gap, time_to_gap_s and
// rounds_to_gap (where a run came within `gap` of the best, relatively), speedup_over_serial/_shotgun (a baseline's
// time to its own final objective over each run's), and curves of the relative gap (F - best) / best.
void compare_runs(std::vector<reports::Entry>& runs, double gap);

}  // namespace dsgd::algorithms::strads
