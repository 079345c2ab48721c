#pragma once
// The `dsgd` command line: a CLI11 app with one subcommand per job. Thin: it parses, calls the layers, and maps
// errors to exit codes (docs/errors.md): 0 success, 1 runtime failure, 2 usage or input error, 3 internal error.

#include <iosfwd>
#include <string>
#include <vector>

#include "app/error_outcome.hpp"

namespace dsgd {
class Interrupt;
}

namespace dsgd::app {

// Runs dsgd with `args` (without the program name), printing to `out` and `err`. Never throws.
// `shown_command` is the command line recorded in results' provenance (default: `args` joined); `reproduce` sets
// it so results name their final path rather than the staging folder they were written in. `interrupt` (main's,
// with its handlers installed; null in tests that do not interrupt) reaches the commands through their Context;
// an InterruptedError exits with 128 + its signal (docs/errors.md "Interrupts").
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
        const std::string& shown_command = "", Interrupt* interrupt = nullptr);

}  // namespace dsgd::app
