#pragma once
// Running an external program (gnuplot, mpirun) with a time limit, so nothing dsgd starts can hang it.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace dsgd {

struct ProcessResult {
  int exit_code = 0;  // the program's exit status, or 128+signal if it was killed
  bool timed_out = false;
  std::string output;  // stdout and stderr together (the last 64 KiB)
};

// Runs argv[0] (looked up in PATH) with the given arguments in `working_dir` (empty: the current one), standard
// input from /dev/null. Kills it after `timeout`. Throws UnavailableError if the program cannot be started (e.g.
// not installed), naming it.
ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                          const std::filesystem::path& working_dir = {});

// True if `program` is found in PATH and executable.
bool program_exists(const std::string& program);

}  // namespace dsgd
