#pragma once
// The results entries of the simulated studies, built beside the studies that computed them: one per predicted
// point with the published value and their difference (labels study, kind "point", role), one per FITTED value,
// published reference and calibration, as the report's manifest selects them (docs/results-schema.md).

#include <string>
#include <vector>

#include "reports/results.hpp"
#include "simulate/scaling_study.hpp"
#include "simulate/scheme_study.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/weak_scaling.hpp"

namespace dsgd::simulate {

// A results entry of one simulated run: executor simgrid, `seconds_per_iteration` as its time.
reports::Entry simulated_entry(std::string name, const std::string& platform, const std::string& algorithm,
                               const std::string& model, const std::string& fidelity, int ranks,
                               double seconds_per_iteration);

// What a simulation adds to the entry of what it ran: the level that ran, `platform`, the simulation's wall time.
void add_simulation(reports::Entry& entry, const SimulationResult& run, const std::string& platform);

// An entry of a study named `name`, of `kind` ("point", "fitted", "calibration", "published"): executor simgrid and
// the labels study and kind.
reports::Entry study_entry(std::string name, const std::string& study, const std::string& kind);

// One point of a weak-scaling simulation of `options` on `platform` (its mean rank's breakdown; compression options
// where the run compressed).
reports::Entry to_entry(const ScalingPoint& point, const ScalingOptions& options, const std::string& platform);

// A published scaling study's entries (scaling_study.hpp), and a scheme study's (scheme_study.hpp).
std::vector<reports::Entry> to_entries(const StudyOutcome& outcome);
std::vector<reports::Entry> to_entries(const SchemeOutcome& outcome);

}  // namespace dsgd::simulate
