#pragma once
// How dsgd and dsgd-mpi end on an error: the exit codes and the one line they print (docs/errors.md).

#include <exception>
#include <string>

namespace dsgd::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;

// An error that ends a command: its one-line message (without the "dsgd: " prefix) and the exit code.
// std::bad_alloc is the memory error, exit 1; a std::exception that is not dsgd's is "unexpected error", exit 3.
struct ErrorOutcome {
  std::string message;
  int exit_code = kExitInternal;
};
ErrorOutcome outcome_of(const std::exception& error);

}  // namespace dsgd::app
