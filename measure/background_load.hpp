#pragma once
// How much of this machine other programs used while we measured. Calibration and validation time kernels and
// runs on a machine that may be shared (this project's has 2 cores and other users): a timing taken while others
// kept cores busy is slower than the machine is, so both record this beside their timings and measure again when
// it is high.

#include <utility>

namespace dsgd::measure {

// CPU seconds at one moment: the whole machine's busy time (/proc/stat: user, nice, system, irq, softirq, steal)
// and this process's with its children that were waited for (getrusage: the MPI ranks once mpirun returned).
struct CpuClock {
  double machine_busy_s = 0;
  double own_s = 0;
  double wall_s = 0;

  static CpuClock now();
  // The cores other programs kept busy on average since `start` (0 where /proc/stat cannot be read).
  double others_cores_since(const CpuClock& start) const;
};

// A measurement and how much other programs disturbed it.
template <typename T>
struct Disturbed {
  T value;
  double others_cores = 0;
};

// Runs `measure()` and, while other programs kept more than `busy_cores` cores busy during it, runs it again (at
// most `retries` times, calling `on_retry(others_cores)` before each); returns the least disturbed result.
template <typename Measure, typename OnRetry>
auto least_disturbed(Measure&& measure, int retries, double busy_cores, OnRetry&& on_retry)
    -> Disturbed<decltype(measure())> {
  const auto once = [&] {
    const CpuClock start = CpuClock::now();
    auto value = measure();
    return Disturbed<decltype(measure())>{std::move(value), CpuClock::now().others_cores_since(start)};
  };
  auto best = once();
  for (int retry = 0; retry < retries && best.others_cores > busy_cores; ++retry) {
    on_retry(best.others_cores);
    auto again = once();
    if (again.others_cores < best.others_cores) best = std::move(again);
  }
  return best;
}

}  // namespace dsgd::measure
