#include "measure/background_load.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

namespace dsgd::measure {

namespace {

double seconds(const timeval& time) {
  return static_cast<double>(time.tv_sec) + 1e-6 * static_cast<double>(time.tv_usec);
}

}  // namespace

CpuClock CpuClock::now() {
  CpuClock clock;
  std::ifstream stat("/proc/stat");
  std::string label;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) {
    clock.machine_busy_s = (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage usage{};
    getrusage(who, &usage);
    clock.own_s += seconds(usage.ru_utime) + seconds(usage.ru_stime);
  }
  clock.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return clock;
}

double CpuClock::others_cores_since(const CpuClock& start) const {
  const double wall = wall_s - start.wall_s;
  if (!(wall > 0) || machine_busy_s == 0) return 0;
  return std::max(0.0, ((machine_busy_s - start.machine_busy_s) - (own_s - start.own_s)) / wall);
}

}  // namespace dsgd::measure
