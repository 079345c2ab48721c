#include "measure/waiting_share.hpp"

#include <sys/resource.h>

#include <chrono>
#include <ctime>
#include <string>

#include "core/error.hpp"
#include "core/stopwatch.hpp"
#include "measure/threads/executor.hpp"

namespace dsgd::measure {

namespace {

constexpr Tag kStartTag = 1;
constexpr Tag kDoneTag = 2;

}  // namespace

void compute_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile double sink = 1;
  while (std::chrono::steady_clock::now() < end) {
    double x = sink;
    for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
    sink = x;
  }
}

WaitingShare measure_waiting_share(Comm& comm, double seconds, const std::function<double()>& cpu_seconds) {
  if (comm.size() < 2) {
    throw InputError("waiting share: needs at least 2 ranks (one waits, the others compute), got " +
                     std::to_string(comm.size()));
  }
  if (!(seconds > 0)) throw InputError("waiting share: the compute time must be > 0 seconds");
  char byte = 0;
  if (comm.rank() != 0) {
    comm.recv(0, kStartTag, &byte, 1, Category::kWait);
    const double cpu_start = cpu_seconds();
    compute_for(seconds);
    const double computed_cpu_s = cpu_seconds() - cpu_start;
    comm.send(0, kDoneTag, &computed_cpu_s, sizeof computed_cpu_s, Category::kWait);
    return {};
  }
  // The clocks start before the start signals: a computing rank may begin before this thread runs again.
  const double cpu_start = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (int rank = 1; rank < comm.size(); ++rank) comm.send(rank, kStartTag, &byte, 1, Category::kWait);
  double computed_cpu_s = 0;
  for (int rank = 1; rank < comm.size(); ++rank) {
    double one = 0;
    comm.recv(rank, kDoneTag, &one, sizeof one, Category::kWait);
    computed_cpu_s += one;
  }
  WaitingShare measured;
  measured.wall_s = seconds_since(start);
  measured.cpu_s = cpu_seconds() - cpu_start;
  measured.computing = comm.size() - 1;
  measured.computing_cpu_s = computed_cpu_s / measured.computing;
  return measured;
}

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& time) {
    return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

WaitingShare threads_waiting_share(int ranks, double seconds) {
  WorldOptions world;
  world.size = ranks;
  world.timeout_s = seconds + 60;
  WaitingShare measured;
  threads::run(world, [&](Comm& comm) {
    const WaitingShare mine = measure_waiting_share(comm, seconds, thread_cpu_seconds);
    if (comm.rank() == 0) measured = mine;
  });
  return measured;
}

}  // namespace dsgd::measure
