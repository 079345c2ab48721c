#pragma once
// The results entries of a single-device study (device_study.hpp), built beside the study: one "point" per (model,
// batch) with the predicted and published rates, their difference and the kernels priced, and one "fitted" with the
// device's FITTED efficiency; executor simgrid, fidelity "kernel model", the labels study, kind and device.

#include <vector>

#include "reports/results.hpp"
#include "simulate/device_study.hpp"

namespace dsgd::simulate {

// The rows in the study's order, then the fitted efficiency.
std::vector<reports::Entry> to_entries(const DeviceStudyOutcome& outcome);

}  // namespace dsgd::simulate
