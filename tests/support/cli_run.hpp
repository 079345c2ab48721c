#pragma once
// Running `dsgd` in-process for the app tests: the exit code and what it printed on each stream; the real dsgd
// executable of this build, for what needs a process of its own (its MPI launches find dsgd-mpi beside it, signals
// reach it); and the fixture of the command tests that write files, a fresh folder per test with `dsgd(args)` to run.

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "core/subprocess.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::testing {

struct CliOutcome {
  int code;
  std::string out;
  std::string err;
};

inline CliOutcome run_dsgd(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = app::run(args, out, err);
  return {code, out.str(), err.str()};
}

// The build's dsgd executable.
inline std::string dsgd_executable() { return std::string(DSGD_BINARY_DIR) + "/app/dsgd"; }

// Runs the real dsgd with `args` as a user does (core/subprocess.hpp): exit code and output together.
inline ProcessResult run_dsgd_executable(const std::vector<std::string>& args,
                                         std::chrono::seconds timeout = std::chrono::seconds(120)) {
  std::vector<std::string> argv = {dsgd_executable()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, timeout);
}

class CliScratchTest : public ScratchDirTest {
 protected:
  static CliOutcome dsgd(const std::vector<std::string>& args) { return run_dsgd(args); }
};

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace dsgd::testing
