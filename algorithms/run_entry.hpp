#pragma once
// A training run's results entry (docs/results-schema.md), built beside the runner that produced the numbers: the
// options, the accuracy curves, the time breakdown of a worker and of the master, seed 000 Table 3's shares, the
// staleness and the bytes on the wire. Every executor's run (threads, MPI, numeric simulation) comes out alike.

#include <cstdint>
#include <string>

#include "algorithms/runner.hpp"
#include "core/breakdown.hpp"
#include "core/stats.hpp"
#include "reports/results.hpp"

namespace dsgd::algorithms {

// What the entry says beyond the run's options and result: where it ran and on what data.
struct RunEntryContext {
  std::string executor;          // threads, mpi or simgrid
  std::string dataset;           // as the command line named it
  std::int64_t test_images = 0;  // > 0: the accuracy is on at most this many test images
};

reports::Entry to_entry(const RunOptions& run, const RunResult& result, const RunEntryContext& context);

// Staleness counters (staleness_mean, _p99, _max, pushes) and the curve "staleness_histogram" (pushes against
// staleness in updates), where the run had a parameter server.
void add_staleness(reports::Entry& entry, const CountHistogram& staleness);
// entry.counters bytes_sent_per_iteration (per worker) and master_bytes_sent_per_iteration, where reported.
void add_bytes_sent(reports::Entry& entry, const RunResult& result);

}  // namespace dsgd::algorithms
