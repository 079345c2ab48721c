#pragma once
// An allreduce's results entry, as nccl-tests reports one, for every executor that times or simulates it (the
// measured sweep of measure/allreduce_sweep.hpp, the simulated one of simulate/allreduce_sweep.hpp): bytes, time,
// algbw and busbw (docs/commands.md, `dsgd bench allreduce`).

#include <cstddef>
#include <cstdint>
#include <string>

#include "reports/results.hpp"

namespace dsgd::reports {

// nccl-tests' definitions: algbw = bytes / time; busbw = algbw x 2 (P - 1) / P for an allreduce, the rate each
// rank's link carries, comparable across rank counts.
double algorithm_bandwidth_Bps(double bytes, double seconds);
double allreduce_bus_factor(int ranks);

// The times of `samples` runs of one allreduce of `floats` floats over `ranks` ranks.
struct AllreduceTimes {
  double min_s = 0;
  double median_s = 0;
  double max_s = 0;
  std::int64_t samples = 1;
};

// real_time the median; counters floats, bytes, seconds (the median), seconds_min, seconds_median, seconds_max,
// algbw_Bps and busbw_Bps (of the median). Name "allreduce/VARIANT/FLOATS".
Entry allreduce_entry(const std::string& executor, const std::string& fidelity, const std::string& variant, int ranks,
                      std::size_t floats, const AllreduceTimes& times);

}  // namespace dsgd::reports
