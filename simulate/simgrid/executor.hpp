#pragma once
// The SimGrid executor: one S4U actor per worker, rank r on node r of a platform (one rank per node; see
// simulate/simgrid/platform_builder.hpp), each with a SimgridComm (simulate/simgrid/comm.hpp). Time is
// SimGrid's simulated clock. Parallel to measure/threads/executor.hpp and measure/mpi/executor.hpp.
//
// One simulation per process. SimGrid's Engine is a process-wide singleton that cannot be created twice, and a
// platform cannot be extended once the engine has run. So by default (SimulationOptions::isolate) each
// simgrid::run() forks a child process that starts its own engine, builds the platform, runs the actors and
// sends the result back through a pipe, then exits with _exit() (no atexit handlers, no destructors of the
// parent's objects). Consequences for callers:
//  * Anything the workers write to memory stays in the child. To bring data back, check it in the workers (an
//    exception comes back as an error) or serialise it in SimulationOptions::collect, which runs in the child
//    after the simulation and whose string comes back in SimulationResult::collected.
//  * The fork happens in the calling thread; other threads of the caller do not exist in the child, so workers
//    must not wait on locks those threads might hold.
//  * A crash of SimGrid or of a worker (a signal) kills only the child and becomes an InternalError here.
// With isolate = false the simulation runs in the calling process, which then holds SimGrid's engine for good:
// any later simgrid::run() in that process throws UnavailableError. Use it for one-shot programs and for
// profiling.
//
// Failures. When a worker throws, the other actors are killed at once (they would only time out waiting for it).
// Deadlocks: with a finite WorldOptions::timeout_s every wait ends in a TimeoutError. With an infinite one,
// SimGrid 3.32 notices when every actor is blocked and nothing is pending: it logs (silenced here), fires
// Engine::on_deadlock and kills every actor; the executor turns that into a CommError naming what each rank
// waits for. Nothing hangs except a worker that loops without ever calling SimGrid (see wall_timeout_s).

#include <functional>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/interrupt.hpp"
#include "core/world.hpp"
#include "platforms/platform.hpp"
#include "simulate/simgrid/comm.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

// How deterministic collectives are simulated (docs/design.md "Fidelity levels"): message by message, or as a few
// SimGrid flows per step (simulate/simgrid/flows.hpp), or in closed form without SimGrid (kAnalytic:
// simulate/analytic/executor.hpp, one representative rank; only for worlds whose ranks all do what rank 0 does,
// which the caller must know). kAuto picks flow for size-only worlds of at least kFlowFromRanks ranks -- where
// message level costs tens of milliseconds of wall time per collective -- and message otherwise; it never picks
// analytic (simulate/weak_scaling.hpp does, for algorithms it knows to be symmetric). Messages outside collectives
// are simulated one by one at the message and flow levels.
enum class Fidelity { kAuto, kMessage, kFlow, kAnalytic };
inline constexpr int kFlowFromRanks = 512;
std::string_view to_string(Fidelity fidelity);
// Parses "auto", "message", "flow", "analytic"; UnknownNameError lists them.
Fidelity fidelity_from_string(std::string_view name);

struct SimulationOptions {
  // kFlow and kAnalytic need a size-only world (WorldOptions::payload false): flows carry no data.
  Fidelity fidelity = Fidelity::kAuto;
  // Where ranks go (simulate/simgrid/platform_builder.hpp).
  PlacementOptions placement;
  // Seeds the platform's compute noise (platforms::Noise); equal seeds, equal simulations.
  std::uint64_t noise_seed = 0;
  // Timeline spans kept for a trace (SimulationResult::timeline); 0 keeps none.
  std::size_t trace_events = 0;
  // Flow level: a step's alike groups of activities that share nothing with one another simulated once
  // (simulate/simgrid/flows.hpp); false simulates every activity, to check the shortcut against.
  bool flow_replicas = true;
  // kAnalytic: price the binomial broadcast and reduce from schedules recorded for the whole world, as every other
  // collective is, instead of enumerating their steps in closed form (simulate/analytic/tree_schedules.hpp). The
  // same answer, at O(P) memory and many times the wall time: for comparing the two.
  bool analytic_recorded_schedules = false;
  // SimGrid's network model. "CM02" with cross_traffic and tcp_gamma off is the pure alpha-beta model of the
  // platform's links; "LV08" (SimGrid's default) adds its own latency and bandwidth factors. Valid values:
  // CM02, LV08, SMPI, IB.
  std::string network_model = "CM02";
  bool cross_traffic = false;  // SimGrid's network/crosstraffic: acknowledgements load the reverse direction
  // SimGrid's TCP window bound (network/TCP-gamma, 4 MiB): caps a flow at gamma / (2 x latency), so with 1 ms of
  // latency at most 2 GB/s. Off keeps the link's bandwidth.
  bool tcp_gamma = false;
  bool isolate = true;        // run in a forked child process (see above)
  double wall_timeout_s = 0;  // with isolate: kill the child and throw TimeoutError after this much wall time; 0: none
  // With isolate: once requested, SIGTERM is passed on to the child (whose workers may stop early: the training
  // runner's RunOptions::interrupt), which is killed if it has not finished kStopGrace later (InterruptedError).
  const Interrupt* interrupt = nullptr;
  // Flow level: transfers of a step that meet only at a FATPIPE link (a GPU node's root complex, which gives each
  // flow its whole bandwidth) are folded into representatives like those that share no link. Off: each of them is
  // its own SimGrid flow, as before this fold (the full simulation the fold is checked against; same physics, 7-11x
  // the wall time of a ring step at 512 GPUs of p100-roce-25g: docs/simulation.md "Folding at FATPIPE links").
  bool fold_fatpipe_flows = true;
  // With payloads: OS threads that run the ranks' rank-local kernels (ComputeStep::rank_local) side by side, the
  // simulation's own thread counted (simulate/simgrid/kernel_pool.hpp); 0: one per processor this process may use,
  // 1: every kernel in the simulation's thread. The results are the same bits for every count.
  int kernel_threads = 0;
  // Extra SimGrid logging settings, as --log takes them ("root.threshold:info"). Empty: SimGrid stays silent.
  std::string log;
  // Runs in the simulation's process after the engine finished without error; its result comes back in
  // SimulationResult::collected.
  std::function<std::string()> collect;
};

// The executors' WorldResult in simulated seconds (time_s: until the last worker returned; per_rank: simulated
// seconds per category; events: the first SimulationOptions::trace_events spans, in the order they ended), and what
// only a simulation has.
struct SimulationResult : WorldResult {
  Fidelity fidelity = Fidelity::kMessage;  // the level that ran: never kAuto
  double setup_wall_s = 0;                 // wall time to start the engine, build the platform and create the actors
  double run_wall_s = 0;                   // wall time inside Engine::run()
  std::string collected;                   // what SimulationOptions::collect returned
};

namespace simgrid {
// Runs `worker` for every rank of a world of world.size ranks on `platform` and returns when all have returned.
// Throws before starting anything: InputError for a bad world (size < 1 or more ranks than nodes, timeout_s not
// > 0, flow fidelity with payloads) or an unknown network model (UnknownNameError), UnavailableError for a topology not
// yet simulated or a process that already holds SimGrid's engine. If a worker throws, the other actors are killed and
// the first error is rethrown: dsgd errors keep their class and message (CommError, TimeoutError, InputError, ...; an
// UnknownNameError from a forked simulation comes back as InputError); other exceptions become dsgd::Error with
// "rank R: " before their message. A deadlock (only with an infinite timeout_s) is a CommError naming what each
// rank waits for. A crash of the forked simulation is an InternalError; wall_timeout_s past, a TimeoutError.
SimulationResult run(const platforms::Platform& platform, const WorldOptions& world, const WorkerFunction& worker,
                     const SimulationOptions& options = {});
}  // namespace simgrid

// The network models simgrid::run accepts.
const std::vector<std::string>& network_model_names();

}  // namespace dsgd::simulate
