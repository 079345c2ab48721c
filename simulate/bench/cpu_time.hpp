#pragma once
// CPU time for the benchmarks that compare a simulation with its reference: the forked simulations' time counts.

#include <sys/resource.h>

namespace dsgd::bench {

// CPU seconds (user and system) of this process's threads and of its reaped children (the forked simulations).
inline double cpu_seconds() {
  const auto seconds = [](int who) {
    rusage usage{};
    getrusage(who, &usage);
    const auto of = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
    };
    return of(usage.ru_utime) + of(usage.ru_stime);
  };
  return seconds(RUSAGE_SELF) + seconds(RUSAGE_CHILDREN);
}

// Page faults (minor and major) of this process and of its reaped children: a fresh process pays one for each page
// it touches first, which dominates a short simulation's fixed cost on some machines (docs/time-to-accuracy.md
// "Cost").
inline double page_faults() {
  const auto faults = [](int who) {
    rusage usage{};
    getrusage(who, &usage);
    return static_cast<double>(usage.ru_minflt + usage.ru_majflt);
  };
  return faults(RUSAGE_SELF) + faults(RUSAGE_CHILDREN);
}

}  // namespace dsgd::bench
