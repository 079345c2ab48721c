#pragma once
// Running `dsgd` in-process for the app tests: the exit code and what it printed on each stream; and the fixture of
// the command tests that write files, a fresh folder per test with `dsgd(args)` to run.

#include <sstream>
#include <string>
#include <vector>

#include "app/cli.hpp"
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

class CliScratchTest : public ScratchDirTest {
 protected:
  static CliOutcome dsgd(const std::vector<std::string>& args) { return run_dsgd(args); }
};

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace dsgd::testing
