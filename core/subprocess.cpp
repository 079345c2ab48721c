#include "core/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>  // kill
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.hpp"

namespace dsgd {

namespace {

constexpr std::size_t kMaxOutputBytes = 64 * 1024;

std::filesystem::path find_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Appends what is readable on `fd` now (non-blocking) to `output`, keeping its last kMaxOutputBytes. False once
// the pipe is closed.
bool drain(int fd, std::string& output, int wait_ms, const OutputSink& on_output) {
  pollfd ready{fd, POLLIN, 0};
  const int polled = ::poll(&ready, 1, wait_ms);
  if (polled < 0 && errno != EINTR) return false;
  if (polled <= 0) return true;
  char buffer[4096];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  output.append(buffer, static_cast<std::size_t>(n));
  if (on_output) on_output(std::string_view(buffer, static_cast<std::size_t>(n)));
  if (output.size() > kMaxOutputBytes) output.erase(0, output.size() - kMaxOutputBytes);
  return true;
}

// Sends `signal` to the process group `leader` leads and to every process of its session (a child may have moved
// to a group of its own: OpenMPI puts each rank in one).
void signal_session(pid_t leader, int signal) {
  ::kill(-leader, signal);
  for (const auto& process : session_processes(leader)) ::kill(process.pid, signal);
}

// Stops the child `pid` (a session leader) and its session: `first` to all of them, then, if any is left after
// `grace`, SIGKILL. Reaps the child into `status`, keeps reading its output from `fd` (open: not yet closed) so it
// cannot block on a full pipe, and returns the names of the other processes that were running.
std::vector<std::string> stop_session(pid_t pid, int first, std::chrono::milliseconds grace, int fd, bool& open,
                                      std::string& output, int& status, const OutputSink& on_output) {
  std::vector<std::string> stopped;
  for (const auto& process : session_processes(pid)) {
    if (process.pid != pid) stopped.push_back(process.name);
  }
  bool reaped = false;
  const auto reap = [&](int options) {
    if (reaped) return;
    pid_t done = 0;
    while ((done = ::waitpid(pid, &status, options)) < 0 && errno == EINTR) {
    }
    reaped = done == pid || done < 0;
  };
  const auto wait_until = [&](std::chrono::steady_clock::time_point deadline) {
    while (std::chrono::steady_clock::now() < deadline) {
      reap(WNOHANG);
      if (reaped && session_processes(pid).empty()) return true;
      if (open) {
        open = drain(fd, output, 20, on_output);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return false;
  };
  signal_session(pid, first);
  if (first != SIGKILL && wait_until(std::chrono::steady_clock::now() + grace)) return stopped;
  signal_session(pid, SIGKILL);
  reap(0);
  // SIGKILL cannot be caught: what is left is on its way out (the kernel frees it within milliseconds).
  wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  return stopped;
}

}  // namespace

std::vector<ProcessInfo> session_processes(int session) {
  std::vector<ProcessInfo> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;  // gone meanwhile
    // "PID (COMM) STATE PPID PGRP SESSION ...": COMM may hold spaces and parentheses, so split at the last ')'.
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    int parent = 0;
    int group = 0;
    int process_session = 0;
    if (!(rest >> state >> parent >> group >> process_session)) continue;
    if (process_session != session || state == 'Z' || state == 'X') continue;
    found.push_back({std::stoi(name), stat.substr(open + 1, close - open - 1)});
  }
  return found;
}

bool program_exists(const std::string& program) {
  const auto found = find_in_path(program);
  return !found.empty() && ::access(found.c_str(), X_OK) == 0;
}

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                          const std::filesystem::path& working_dir, const Interrupt* interrupt,
                          const OutputSink& on_output) {
  DSGD_ENFORCE(!argv.empty(), "run_process needs a program");
  const auto program = find_in_path(argv[0]);
  if (program.empty() || ::access(program.c_str(), X_OK) != 0) {
    throw UnavailableError("cannot run '" + argv[0] +
                           "': not found in PATH (is it installed? scripts/setup.sh installs dsgd's dependencies)");
  }

  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw Error("cannot create pipes for '" + argv[0] + "': " + std::strerror(errno));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // Watched from before the fork: a signal that arrives meanwhile is seen below, not lost to the default action.
  const Interrupt::Watch watch(interrupt);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start '" + argv[0] + "': " + std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec. A session of its own (see the header); SIGTERM if dsgd dies.
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // dsgd died before prctl took effect
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(out_pipe[1], STDERR_FILENO);
    if (!working_dir.empty() && ::chdir(working_dir.c_str()) != 0) ::_exit(127);
    ::execv(program.c_str(), args.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);

  ProcessResult result;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool open = true;
  bool reaped = false;
  // Until the output is closed and the child has exited (either may come first), in short slices: an interrupt is
  // noticed within 100 ms.
  while (open || !reaped) {
    if (interrupt != nullptr && interrupt->requested()) {
      result.interrupted_by = interrupt->signal();
      result.stopped_processes =
          stop_session(pid, SIGTERM, kStopGrace, out_pipe[0], open, result.output, status, on_output);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      result.stopped_processes = stop_session(pid, SIGKILL, {}, out_pipe[0], open, result.output, status, on_output);
      break;
    }
    if (open) {
      open = drain(out_pipe[0], result.output, 100, on_output);
    } else {
      pid_t done = 0;
      while ((done = ::waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR) {
      }
      reaped = done == pid || done < 0;  // < 0: not ours to wait for any more
      if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ::close(out_pipe[0]);
  const bool stopped = result.timed_out || result.interrupted_by != 0;
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  if (result.exit_code == 127 && !stopped && result.output.empty()) {
    throw UnavailableError("cannot run '" + argv[0] + "': exec failed");
  }
  return result;
}

}  // namespace dsgd
