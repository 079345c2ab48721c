#include "simulate/forked.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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

ForkedOutcome run_forked_child(const std::string& what, double wall_timeout_s,
                               const std::function<std::string()>& body) {
  const auto start = std::chrono::steady_clock::now();
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
    ::close(fds[0]);
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
  for (;;) {
    if (wall_timeout_s > 0) {
      const double left = wall_timeout_s - seconds_since(start);
      if (left <= 0) {
        outcome.timed_out = true;
        break;
      }
      pollfd ready{fds[0], POLLIN, 0};
      const int wait_ms = static_cast<int>(std::min(std::ceil(left * 1000), 3.6e6));  // at most an hour per poll
      const int polled = ::poll(&ready, 1, wait_ms);
      if (polled == 0 || (polled < 0 && errno == EINTR)) continue;  // check the time left again
    }
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    outcome.report.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (outcome.timed_out) ::kill(child, SIGKILL);  // our own child, stuck in a body that never returns
  while (::waitpid(child, &outcome.status, 0) < 0 && errno == EINTR) {
  }
  return outcome;
}

}  // namespace dsgd::simulate
