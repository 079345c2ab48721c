#pragma once
// The results entries of the groups-of-a-chip accuracy study (accuracy_study.hpp), built beside the study: one
// "point" per number of groups (executor simgrid, fidelity message, real_time the simulated seconds to the target or
// 0) with the numeric run, the model's prediction and its error, the published time and speedups and the test
// accuracy curve; and one "fitted" per FITTED parameter of the model, S_min and B_noise (docs/time-to-accuracy.md).

#include <string>
#include <vector>

#include "reports/results.hpp"
#include "simulate/accuracy_study.hpp"

namespace dsgd::simulate {

// The points in the study's order, then the fitted parameters where there is a model. `options` are the study's
// (algorithm, model, batch per group, seed, fit_up_to); `dataset` names the data as the command line did.
std::vector<reports::Entry> to_entries(const AccuracyStudy& study, const AccuracyStudyOptions& options,
                                       const std::string& dataset);

}  // namespace dsgd::simulate
