#pragma once
// The `dsgd` command line: a CLI11 app with one subcommand per job. Thin: it parses, calls the layers, and maps
// errors to exit codes (docs/errors.md): 0 success, 1 runtime failure, 2 usage or input error, 3 internal error.

#include <iosfwd>
#include <string>
#include <vector>

namespace dsgd::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;

// Runs dsgd with `args` (without the program name), printing to `out` and `err`. Never throws.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace dsgd::app
