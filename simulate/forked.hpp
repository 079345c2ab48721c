#pragma once
// Running one simulation in a forked child process: SimGrid's engine is process-global and cannot be restarted, so
// each simulation gets a fresh process, and a crash or a runaway worker in it cannot take the caller down. The
// SimGrid executor (simgrid/executor.cpp) and the mesh-sharing chip (mesh_sharing.cpp) both run this way; each
// encodes its own report and turns a failed child into its own errors.

#include <functional>
#include <string>

#include "core/interrupt.hpp"

namespace dsgd::simulate {

struct ForkedOutcome {
  std::string report;      // what the child's body returned (empty if it died first)
  bool timed_out = false;  // the wall-time limit passed: the child was killed
  int interrupted_by = 0;  // the interrupt's signal, where the child was killed for not stopping in time
  int status = 0;          // waitpid()'s status of the child
};

// Forks; the child runs `body` (which must not throw: it encodes its own errors into the report), writes the report
// back through a pipe and _exits. The parent reads it, killing the child after `wall_timeout_s` seconds (no limit
// if <= 0), and reaps it. When `interrupt` is requested the child gets SIGTERM (its own copy of the Interrupt,
// inherited by fork, is then requested: its work may stop early and report), and SIGKILL kStopGrace later if it
// has not finished. The child dies with dsgd (PR_SET_PDEATHSIG). Throws Error if the pipe or the fork cannot be
// made (`what` names the simulation).
ForkedOutcome run_forked_child(const std::string& what, double wall_timeout_s, const std::function<std::string()>& body,
                               const Interrupt* interrupt = nullptr);

}  // namespace dsgd::simulate
