#include "simulate/forked.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "core/error.hpp"
#include "core/stopwatch.hpp"
#include "core/subprocess.hpp"  // kStopGrace

namespace dsgd::simulate {

namespace {

void write_all(int fd, const std::string& bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone: nobody to tell
    written += static_cast<std::size_t>(n);
  }
}

void flush_stdio() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

}  // namespace

ForkedOutcome run_forked_child(const std::string& what, double wall_timeout_s, const std::function<std::string()>& body,
                               const Interrupt* interrupt) {
  const auto start = std::chrono::steady_clock::now();
  const Interrupt::Watch watch(interrupt);  // before the fork: the child inherits it, watched
  const pid_t parent = ::getpid();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(what + ": pipe() failed: " + std::strerror(errno));
  flush_stdio();  // whatever sits in our stdio buffers would otherwise be written twice, once by the child
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(what + ": fork() failed: " + std::strerror(error));
  }
  if (child == 0) {
    // No simulation outlives dsgd: it would run on at full speed for nobody. A process group of its own: a Ctrl-C
    // reaches it only through the parent (above), once; a second one directly would end it without a report.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::setpgid(0, 0);
    if (::getppid() != parent) ::_exit(1);
    // Pipes of simulations another thread forked beside this one would stay open here, and their readers would
    // wait for this child to end before they saw their own child's end: keep only stdio and this report's pipe.
    ::close_range(3, static_cast<unsigned>(fds[1]) - 1, 0);
    ::close_range(static_cast<unsigned>(fds[1]) + 1, ~0U, 0);
    // The parent's free heap is shared copy on write: reused here, each page is copied and, once the child runs
    // threads, the other cores' TLBs are flushed. Given back, it returns as fresh zeroed pages
    // (docs/time-to-accuracy.md "Cost").
    ::malloc_trim(0);
    write_all(fds[1], body());
    ::close(fds[1]);
    flush_stdio();
    // _exit, not exit: the child must not run the parent's atexit handlers and static destructors (a test
    // framework's, for one), nor SimGrid's engine teardown, which serves nobody here.
    ::_exit(0);
  }
  ::close(fds[1]);

  ForkedOutcome outcome;
  char buffer[65536];
  double forwarded_at_s = -1;  // when the interrupt was passed on to the child
  for (;;) {
    if (interrupt != nullptr && interrupt->requested()) {
      if (forwarded_at_s < 0) {
        // SIGTERM whatever the signal was: SimGrid's engine takes SIGINT over (it prints its actors and exits).
        ::kill(child, SIGTERM);
        forwarded_at_s = seconds_since(start);
      } else if (seconds_since(start) - forwarded_at_s > std::chrono::duration<double>(kStopGrace).count()) {
        outcome.interrupted_by = interrupt->signal();
        break;
      }
    }
    if (wall_timeout_s > 0 || interrupt != nullptr) {
      const double left = wall_timeout_s > 0 ? wall_timeout_s - seconds_since(start) : 3600.0;
      if (left <= 0) {
        outcome.timed_out = true;
        break;
      }
      pollfd ready{fds[0], POLLIN, 0};
      // At most an hour per poll; 100 ms slices where an interrupt may come.
      const double slice_ms = interrupt != nullptr ? 100.0 : 3.6e6;
      const int wait_ms = static_cast<int>(std::min(std::ceil(left * 1000), slice_ms));
      const int polled = ::poll(&ready, 1, wait_ms);
      if (polled == 0 || (polled < 0 && errno == EINTR)) continue;  // check the time left again
    }
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    outcome.report.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  // Our own child, stuck in a body that never returns, or slow to stop.
  if (outcome.timed_out || outcome.interrupted_by != 0) ::kill(child, SIGKILL);
  while (::waitpid(child, &outcome.status, 0) < 0 && errno == EINTR) {
  }
  return outcome;
}

}  // namespace dsgd::simulate
