#pragma once
// Starting dsgd-mpi under mpirun and reading back the results file it writes: what `dsgd calibrate`, `dsgd bench
// allreduce --executor mpi` and `dsgd run --executor mpi` share (dsgd links SimGrid, whose library defines MPI_*
// too, so the MPI side is always this separate program).

#include <filesystem>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "measure/mpi/launch.hpp"

namespace dsgd::app {

struct WorkerLaunch {
  std::string command;  // the dsgd command, for messages: "calibrate", "bench", "run"
  std::string what;     // what dsgd-mpi does, for messages: "the ping-pong", "dsgd-mpi run"
  int ranks = 2;
  std::vector<std::string> program;          // dsgd-mpi and its arguments, without --results
  std::filesystem::path results;             // where dsgd-mpi writes them; empty: a temporary file, removed afterwards
  double timeout_s = 600;                    // for the whole mpirun
  std::string timeout_option = "--timeout";  // what sets timeout_s, for messages: "--wall-timeout", ...
  measure::mpi::MpiLaunchOptions launcher;   // mpirun here (default), mpirun --hostfile, or srun
  bool echo = false;  // what mpirun prints goes to context.err as it comes (a run's progress lines), not at the end
};

// Registers --launcher, --hostfile and --launcher-args on `command`, bound to `options` (README "Across nodes").
void add_launch_options(CLI::App& command, measure::mpi::MpiLaunchOptions& options);

struct WorkerOutcome {
  reports::Results results;
  std::filesystem::path results_path;  // where they were read from (gone afterwards if temporary)
};

// Prints "<command>: running <mpirun command line>", runs it and reads the results. Throws Error "<command>:
// <what> did not finish within N s (<timeout_option>): <command line>" or "<command>: <what> failed (mpirun exit
// code N): <failure_summary>"; InputError for an unreadable results file. When context.interrupt is requested,
// stops mpirun and its ranks (run_process) and throws InterruptedError "... stopped mpirun and its N ranks".
WorkerOutcome run_worker(const WorkerLaunch& launch, Context& context);

// What a failed mpirun's `output` says about the failure: "dsgd-mpi rank R was killed by SIGKILL" where mpirun
// reports a rank that died of a signal, then the lines dsgd-mpi printed about itself ("dsgd-mpi: rank R: ..."),
// else the last line that is not one of mpirun's banner rules.
std::string failure_summary(const std::string& output);

}  // namespace dsgd::app
