#pragma once
// The allreduce sweep, written once for the measured executors (threads in this process, MPI ranks in dsgd-mpi):
// every variant at every size, on core/verifiable.hpp's inputs. Round 0 checks every sum exactly and warms up; the
// rounds after it are timed. Variants alternate within a round, starting at a different one each round, so a drift
// of the machine's speed affects them alike. Every sample starts together (the barrier rule: a one-float
// recursive-doubling allreduce, which every Comm has) and is the slowest rank's time, as a collective is done when
// its last rank is. Bandwidths are nccl-tests' (reports/allreduce_entry.hpp).

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/collectives.hpp"
#include "reports/allreduce_entry.hpp"

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

// One results entry per size and variant (reports/allreduce_entry.hpp), of every timed round.
std::vector<reports::Entry> to_entries(const AllreduceSweep& sweep, const std::string& executor);

}  // namespace dsgd::measure
