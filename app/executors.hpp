#pragma once
// The executors `dsgd` puts work on, one table from name to runner (docs/design.md "Executors"):
// threads (this process), mpi (dsgd-mpi under mpirun: dsgd links SimGrid, whose library defines MPI_* too) and
// simgrid (simulated). Commands look an executor up here instead of comparing names.

#include <string>
#include <string_view>
#include <vector>

#include "algorithms/runner.hpp"
#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "measure/mpi/launch.hpp"

namespace dsgd::app {

// One training run, native or simulated.
struct TrainingJob {
  RunCli cli;
  const algorithms::RunData* data = nullptr;  // loaded in this process, for executors whose ranks live here
  double timeout_s = 120;                     // for any wait of a rank for another
  double wall_timeout_s = 3600;               // for a whole run in other processes
  std::string command = "run";                // the dsgd command, for messages
  bool progress = false;                      // print each evaluation on the error stream
  // A diverging loss ends the run with stop reason "diverged" instead of an error (a study that runs every
  // algorithm with the same settings reports it). Executors whose ranks live in other processes report it as the
  // run's error.
  bool record_divergence = false;
  // An interrupt stops a run at its next round (threads, simgrid): true returns its entry (stop_reason
  // "interrupted") for the caller to keep; false throws InterruptedError.
  bool keep_interrupted = false;
  // simgrid: the platform (a catalog name or a file). Ranks per node: simgrid's placement (0: one per compute
  // unit); threads and mpi: WorldOptions::ranks_per_node, their emulated nodes (0: the executor's own).
  std::string platform;
  std::string kernel_profile;  // simgrid: measured per-layer times attached to the platform (--kernel-profile)
  int ranks_per_node = 0;
  int simulation_threads = 0;  // simgrid: threads computing the ranks' gradients side by side (0: one per processor)
  std::string wall_timeout_option = "--wall-timeout";  // what sets wall_timeout_s, for messages
  measure::mpi::MpiLaunchOptions launcher;             // mpi: how the ranks start (app/mpi_worker.hpp)
};

enum class ExecutorKind { kThreads, kMpi, kSimgrid };

struct Executor {
  std::string_view name;
  ExecutorKind kind;
  std::string_view description;
  bool needs_data_here;  // TrainingJob::data must be loaded (the ranks run in this process)
  // Trains and returns the run's results entry: natively (fidelity "measured"), or for simgrid in a numeric
  // simulation (simulate/numeric.hpp: real gradients, simulated time; fidelity "message").
  reports::Entry (*train)(const TrainingJob& job, Context& context);
};

// Every executor, in the order the help texts list them.
const std::vector<Executor>& executor_table();
// The names of the executors that can train: "threads", "mpi", "simgrid".
const std::vector<std::string>& training_executor_names();
// Those that measure this machine: "threads", "mpi" (dsgd validate compares them with predictions).
const std::vector<std::string>& native_executor_names();
// The executor named `name`, which must be one of `accepted`. Throws UnknownNameError("executor", name, accepted).
const Executor& find_executor(std::string_view name, const std::vector<std::string>& accepted);

// Throws unless `job`'s --backend can run on `executor` here: InputError for a device back end in a simulation (it
// prices the platform's devices), UnavailableError where this machine has no device for it. `dsgd run`, the one
// command that takes --backend, calls it before any data loads; the executors do not check again.
void check_backend(ExecutorKind executor, const TrainingJob& job);

}  // namespace dsgd::app
