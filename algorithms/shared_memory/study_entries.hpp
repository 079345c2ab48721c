#pragma once
// The results entries (docs/results-schema.md) of seed 003's studies (studies.hpp), built beside them: each
// method's best run of a sweep with its closeness curves, a data set's Table IV row, the threads study's rows with
// Fig 3's published seconds, and each measured staleness beside Tables I-II's bounds.

#include <string>
#include <vector>

#include "algorithms/shared_memory/studies.hpp"
#include "reports/results.hpp"

namespace dsgd::algorithms::shared_memory {

// An entry measured on threads by `study` ("comparison", "threads", "staleness", "mesh") of `kind` on `dataset`.
reports::Entry study_entry(const std::string& study, const std::string& kind, const std::string& dataset);

// One method's best run of a sweep: time and passes to the target, the winning options, closeness curves.
reports::Entry method_entry(const std::string& study, const std::string& dataset, const std::string& method,
                            const SweepResult& sweep);

// The comparison on one data set: each method's entry, then the data set's Table IV row (kind "dataset").
std::vector<reports::Entry> to_entries(const DatasetOutcome& outcome);
// A row of the threads study on `dataset`, with Fig 3's published seconds where it has that method and count.
reports::Entry to_entry(const ThreadsOutcome& outcome, const std::string& dataset);
// A measured staleness on `dataset`, "within_bounds" of the method's expected bounds or not.
reports::Entry to_entry(const StalenessOutcome& outcome, const std::string& dataset);

}  // namespace dsgd::algorithms::shared_memory
