#include "core/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>  // kill
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

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

}  // namespace

bool program_exists(const std::string& program) {
  const auto found = find_in_path(program);
  return !found.empty() && ::access(found.c_str(), X_OK) == 0;
}

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                          const std::filesystem::path& working_dir) {
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

  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start '" + argv[0] + "': " + std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
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
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool open = true;
  while (open) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fd{out_pipe[0], POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(std::min<long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(out_pipe[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      open = false;
    } else {
      result.output.append(buffer, static_cast<std::size_t>(n));
      if (result.output.size() > kMaxOutputBytes) result.output.erase(0, result.output.size() - kMaxOutputBytes);
    }
  }
  ::close(out_pipe[0]);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  if (result.exit_code == 127 && !result.timed_out && result.output.empty()) {
    throw UnavailableError("cannot run '" + argv[0] + "': exec failed");
  }
  return result;
}

}  // namespace dsgd
