#pragma once
// Wall-clock seconds on the steady clock, the one definition every timer in dsgd uses.

#include <chrono>

namespace dsgd {

using SteadyClock = std::chrono::steady_clock;

// Seconds from `start` to now on the steady clock.
inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// Times from its construction (or the last restart()).
class Stopwatch {
 public:
  Stopwatch() : start_(SteadyClock::now()) {}
  void restart() { start_ = SteadyClock::now(); }
  double elapsed_s() const { return seconds_since(start_); }
  SteadyClock::time_point start() const { return start_; }

 private:
  SteadyClock::time_point start_;
};

}  // namespace dsgd
