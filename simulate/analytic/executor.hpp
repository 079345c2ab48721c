#pragma once
// The analytic fidelity level (docs/design.md "Fidelity levels"): closed-form costs, no SimGrid engine, for worlds
// far beyond what SimGrid's actors can hold (a million cores). Parallel to simulate/simgrid/executor.hpp, whose
// simgrid::run() comes here for Fidelity::kAnalytic.
//
// One representative rank. Only rank 0's worker runs, on a Comm that says it is rank 0 of world.size; the other
// ranks are taken to do exactly what rank 0 does outside collectives (synchronous data-parallel algorithms without
// a master). Its collectives (Comm::run_collective) are priced from their schedules
// (simulate/collective_schedule.hpp, derived once per call for the whole world; the ring allreduce's, P^2
// transfers, in closed form; the binomial broadcast's and reduce's enumerated step by step without being stored,
// simulate/analytic/tree_schedules.hpp, unless SimulationOptions::analytic_recorded_schedules): each step takes as long
// as its slowest transfer -- the route's latency plus bytes over its bottleneck bandwidth, no contention
// (simulate/analytic/route_model.hpp) -- or compute step (flops at the rank's peak, as the flow level). A collective
// starts when the last node is ready, as at the flow level, and each node leaves it when the last step its ranks take
// part in ends. Compute steps cost their roofline time (simulate/compute_cost.hpp). Noise: every node's ready time
// advances by the step's time times the node's own factor (the same generator as the SimGrid executor), so the slowest
// of the nodes sets the start of the next collective; a node's time is that of its slowest rank (core groups of a KNL
// may differ by a core).
//
// Refused (UnavailableError, naming the operation): point-to-point messages, datagrams and shared vectors -- they would
// need the other ranks to exist. The result holds rank 0's breakdown only (SimulationResult::per_rank has one
// entry); the waiting for stragglers is charged to the collective's category, as at the flow level.

#include "core/comm.hpp"
#include "platforms/platform.hpp"
#include "simulate/simgrid/executor.hpp"

namespace dsgd::simulate {

namespace analytic {
// Throws InputError for a world with payloads, a master on the host (rank 0 would not be a worker), or what
// RouteModel throws; UnavailableError as above; what the worker throws.
SimulationResult run(const platforms::Platform& platform, const WorldOptions& world, const WorkerFunction& worker,
                     const SimulationOptions& options);
}  // namespace analytic

}  // namespace dsgd::simulate
