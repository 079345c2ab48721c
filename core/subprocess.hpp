#pragma once
// Running an external program (gnuplot, mpirun) with a time limit, so nothing dsgd starts can hang it, and stopping
// it with everything it started (mpirun's ranks) on a timeout or an interrupt, so nothing dsgd starts outlives it.

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/interrupt.hpp"

namespace dsgd {

struct ProcessResult {
  int exit_code = 0;  // the program's exit status, or 128+signal if it was killed
  bool timed_out = false;
  std::string output;      // stdout and stderr together (the last 64 KiB)
  int interrupted_by = 0;  // the signal of the interrupt that stopped it, 0 if none
  // The names of the processes the program had started (its session, the program itself left out) that were still
  // running when it was stopped (timed out or interrupted), e.g. {"dsgd-mpi", "dsgd-mpi"}.
  std::vector<std::string> stopped_processes;
};

// What the program prints, as it comes (each piece as read, lines may be split), beside ProcessResult::output.
using OutputSink = std::function<void(std::string_view piece)>;

// Runs argv[0] (looked up in PATH) with the given arguments in `working_dir` (empty: the current one), standard
// input from /dev/null, in a session (and process group) of its own: a signal meant for dsgd alone does not reach
// it, and all it starts can be found and stopped. Past `timeout` it and every process of its session are killed
// (SIGKILL). When `interrupt` (watched meanwhile) is requested, they get SIGTERM, then SIGKILL after kStopGrace;
// the result says so (interrupted_by). Should dsgd die first, the program gets SIGTERM (PR_SET_PDEATHSIG). Throws
// UnavailableError if the program cannot be started (e.g. not installed), naming it. `on_output`, where set, gets
// the output as it comes.
ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                          const std::filesystem::path& working_dir = {}, const Interrupt* interrupt = nullptr,
                          const OutputSink& on_output = {});

// How long an interrupted program and its processes have between SIGTERM and SIGKILL.
inline constexpr std::chrono::seconds kStopGrace{5};

// The processes of session `session` (not zombies), as (pid, name) from /proc: what a run_process child started.
struct ProcessInfo {
  int pid = 0;
  std::string name;  // /proc/PID/stat's command name (15 characters at most)
};
std::vector<ProcessInfo> session_processes(int session);

// True if `program` is found in PATH and executable.
bool program_exists(const std::string& program);

}  // namespace dsgd
