#pragma once
// Flow fidelity for the SimGrid executor (docs/design.md "Fidelity levels"): a deterministic collective
// (Comm::run_collective) runs as a whole instead of message by message. Every rank joins it and blocks; the last to
// join derives the schedule (simulate/collective_schedule.hpp, cached per call for the world's size) and starts a
// conductor actor that replays it step by step: each step's transfers become SimGrid flows between the ranks'
// hosts and its compute steps executions on their hosts, all started together; the next step starts when all have
// ended, and each rank is released when the last step it takes part in ends.
//
// "A few flows per step": a step's activities fall into groups that share no resource with one another
// (transfers: the links of their routes; computes: their hosts). A FATPIPE link (a node's root complex) gives each
// flow its whole bandwidth, so flows that meet only there share nothing. Groups that look alike (the same
// activities in schedule order: bytes or flops, link parameters in route order, which links they share, host
// speeds) take equally long, so one representative group stands for all of them; within it SimGrid's network
// model still decides the contention. A flat alpha-beta star thus costs one flow per step whatever the world's
// size, and 64 KNL meshes one mesh's flows (docs/simulation.md "Simulated once, replicated").
//
// Against the message level: equal when every rank joins at the same time and every activity of a step takes
// equally long (tests/simulate/flows_test.cpp holds them together); otherwise the collective starts when the last
// rank joins (a synchronising collective), where message level lets early ranks start their part.
// Messages outside collectives (parameter servers, algorithms' own sends) stay at message level.

#include <simgrid/forward.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/comm.hpp"

namespace dsgd::simulate {

class World;
class SimgridComm;
struct FlowPlan;
class RouteCache;

class FlowCollectives {
 public:
  // `fold_fatpipe_flows`, `replicate`: SimulationOptions::fold_fatpipe_flows, flow_replicas.
  FlowCollectives(World& world, bool fold_fatpipe_flows, bool replicate);
  ~FlowCollectives();
  FlowCollectives(const FlowCollectives&) = delete;
  FlowCollectives& operator=(const FlowCollectives&) = delete;

  // Rank comm.rank()'s part of `call`: blocks until the collective's last step for this rank ended, and charges
  // the time to call.category. Throws CommError if ranks call different collectives in the same position,
  // TimeoutError if not every rank joined within the world's timeout of the first, and what record_schedule
  // throws.
  void join(SimgridComm& comm, const CollectiveCall& call, const std::function<void(Comm&)>& body);

 private:
  struct Instance;
  void conduct(std::uint64_t sequence);
  // The world's timeout passed before every rank joined `instance` (null: it completed): wakes the ranks that did,
  // which throw TimeoutError.
  void expire(const std::shared_ptr<Instance>& instance);
  std::shared_ptr<const FlowPlan> plan_for(const CollectiveCall& call, const std::function<void(Comm&)>& body);

  World& world_;
  bool replicate_;
  std::vector<::simgrid::s4u::SemaphorePtr> gates_;  // per rank: released when its part of a collective ended
  std::vector<std::uint64_t> joined_;                // per rank: how many collectives it joined
  std::map<std::uint64_t, std::shared_ptr<Instance>> instances_;  // by sequence number, until conducted
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const FlowPlan>> plans_;  // by (name, key)
  std::unique_ptr<RouteCache> routes_;  // what the plans need of each route, looked up once per pair of ranks
};

}  // namespace dsgd::simulate
