#pragma once
// The allreduce sweep, written once for the measured executors (threads in this process, MPI ranks in dsgd-mpi):
// every variant at every size, on core/verifiable.hpp's inputs. Round 0 checks every sum exactly and warms up; the
// rounds after it are timed. Variants alternate within a round, starting at a different one each round, so a drift
// of the machine's speed affects them alike. Every sample starts together (the barrier rule: a one-float
// recursive-doubling allreduce, which every Comm has) and is the slowest rank's time, as a collective is done when
// its last rank is. Bandwidths are nccl-tests' (docs/commands.md, `dsgd bench allreduce`).

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/collectives.hpp"
#include "reports/results.hpp"

namespace dsgd::measure {

struct AllreduceSweepOptions {
  std::vector<std::size_t> sizes;     // in floats
  std::vector<std::string> variants;  // core/collectives.hpp's algorithm names, or the caller's (MPI_Allreduce)
  int rounds = 5;                     // timed rounds
};

// Runs one variant's allreduce of `values` (summed in place). run_collective: core/collectives.hpp's by its name.
using RunVariant = std::function<void(Comm& comm, const std::string& variant, Floats values)>;
void run_collective(Comm& comm, const std::string& variant, Floats values);

struct AllreduceSweep {
  std::vector<std::size_t> sizes;
  std::vector<std::string> variants;
  int ranks = 0;
  std::vector<std::vector<std::vector<double>>> seconds;  // [size][variant][timed round]: the slowest rank's
};

// Every rank calls it; every rank gets the samples. Throws InputError for rounds < 1, no size or no variant;
// InternalError naming the variant when a sum is wrong.
AllreduceSweep allreduce_sweep(Comm& comm, const AllreduceSweepOptions& options,
                               const RunVariant& run = run_collective);

// nccl-tests' definitions: algbw = bytes / time; busbw = algbw x 2 (P - 1) / P for an allreduce, the rate each
// rank's link carries, comparable across rank counts.
double algorithm_bandwidth_Bps(double bytes, double seconds);
double allreduce_bus_factor(int ranks);

// One results entry per size and variant: real_time the median sample; counters floats, bytes, seconds_min,
// seconds_median, seconds_max, algbw_Bps and busbw_Bps (of the median). Name "allreduce/VARIANT/FLOATS".
std::vector<reports::Entry> to_entries(const AllreduceSweep& sweep, const std::string& executor);

// An allreduce's results entry from one time (a simulation's, or a median): the fields and counters to_entries
// gives, with the time as its min, median and max.
reports::Entry allreduce_entry(const std::string& executor, const std::string& variant, int ranks, std::size_t floats,
                               double seconds, const std::string& fidelity = "measured");

}  // namespace dsgd::measure
