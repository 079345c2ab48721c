#pragma once
// The runs of `dsgd validate` as results entries: one measured natively (app/executors.hpp's training runners), one
// predicted in SimGrid, and the entry of a row made of several runs. What is measured how, and how
// a row's runs become its numbers, is measure/validation.hpp's; the command itself is app/validate_command.cpp.

#include <cstdint>

#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "reports/results.hpp"
#include "simulate/weak_scaling.hpp"

namespace dsgd::app {

// A run's steady seconds per iteration (measure::steady_seconds_per_iteration), from its accuracy curves' points at
// the end of each round. Throws InternalError if the run has no such curves of two rounds or more.
double steady_seconds_per_iteration(const reports::Entry& run);

// The prediction of a run of `run`'s options on `platform`: the same run, size-only, at message fidelity, in its
// rounds.
simulate::ScalingPoint predict(const platforms::Platform& platform, const algorithms::RunOptions& run);

// The predicted breakdown of a worker (rank 1 with a master, else rank 0) per iteration, added into the entry with
// `weight` (1 / repetitions: the entry holds the mean).
void add_predicted(reports::Entry& entry, const simulate::ScalingPoint& point, bool has_master, std::int64_t iterations,
                   double weight);

// A later repetition's breakdowns added into the entry of the first: breakdown_s and first_round_s become sums over
// the repetitions.
void add_repetition(reports::Entry& entry, const reports::Entry& repetition);

// The measured breakdown of the worker per iteration after the warm-up round (the entry's breakdown_s minus its
// first_round_s, over the measured iterations of every repetition), into the entry beside the predicted one.
void add_measured(reports::Entry& entry, std::int64_t iterations);

}  // namespace dsgd::app
