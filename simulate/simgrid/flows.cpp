#include "simulate/simgrid/flows.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <simgrid/Exception.hpp>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <unordered_map>

#include "simulate/collective_schedule.hpp"
#include "simulate/simgrid/comm.hpp"

namespace dsgd::simulate {

namespace s4u = ::simgrid::s4u;

// A schedule reduced to the activities the conductor starts: per step, one representative per class of alike
// activities that share nothing, and every activity that shares a link or a host.
struct FlowPlan {
  struct Compute {
    int rank = 0;
    double flops = 0;
  };
  std::vector<std::vector<ScheduledTransfer>> transfers;  // per step
  std::vector<std::vector<Compute>> computes;             // per step
  std::vector<std::vector<int>> released;  // [k]: the ranks that leave once step k-1 ended ([0]: at once)
  std::vector<std::uint64_t> sent_bytes;   // per rank: all it sends in the collective (Comm::bytes_sent)
};

struct FlowCollectives::Instance {
  CollectiveCall call;
  std::vector<int> joined;  // ranks, in joining order
  std::shared_ptr<const FlowPlan> plan;
  // Fires the world's timeout after the first rank joined, unless the last one joined before (see join()).
  ::simgrid::kernel::timer::Timer* deadline = nullptr;
  bool timed_out = false;
};

// What make_plan needs of a route between two ranks' hosts, looked up once per pair for the world's life: a
// schedule's steps cross the same routes over and over (a ring allreduce's 1533 steps at 512 ranks cross the same
// 512), and SimGrid's route_to was the costliest call of a plan.
struct PlannedRoute {
  bool loopback = false;
  bool shares_cores = false;  // World::transfer_shares_cores: a piecewise link's segment factors depend on it
  // The route's links whose flows share their bandwidth (every sharing policy but FATPIPE, unless FATPIPE links are
  // not folded), as RouteCache ids.
  std::vector<std::size_t> contended;
  // Which (bandwidth, latency, sharing policy) sequence the route's links are, as a RouteCache id: two flows of
  // equal bytes on routes of equal kind take equally long when they share nothing.
  std::size_t kind = 0;
};

class RouteCache {
 public:
  // `fold_fatpipe`: FATPIPE links do not count as contended (SimulationOptions::fold_fatpipe_flows).
  explicit RouteCache(bool fold_fatpipe) : fold_fatpipe_(fold_fatpipe) {}

  const PlannedRoute& route(const World& world, int source, int destination) {
    const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(source)) << 32) |
                              static_cast<std::uint32_t>(destination);
    if (const auto found = routes_.find(key); found != routes_.end()) return found->second;
    std::vector<s4u::Link*> links;
    double latency_s = 0;
    world.host(source)->route_to(world.host(destination), links, &latency_s);
    PlannedRoute planned;
    planned.loopback = links.empty();  // left to SimGrid: always simulated
    planned.shares_cores = world.transfer_shares_cores(world.host(source), world.host(destination));
    std::vector<double> kind;
    for (const auto* link : links) {
      const auto policy = link->get_sharing_policy();
      kind.insert(kind.end(), {link->get_bandwidth(), link->get_latency(), static_cast<double>(policy)});
      // A FATPIPE link gives each of its flows the whole bandwidth (SimGrid's max rather than sum): flows that
      // meet only there do not contend, as the node's root complex (the builder's "-root", free to cross).
      if (fold_fatpipe_ && policy == s4u::Link::SharingPolicy::FATPIPE) continue;
      planned.contended.push_back(link_ids_.try_emplace(link, link_ids_.size()).first->second);
    }
    planned.kind = kinds_.try_emplace(std::move(kind), kinds_.size()).first->second;
    return routes_.emplace(key, std::move(planned)).first->second;
  }

  std::size_t link_count() const { return link_ids_.size(); }

 private:
  bool fold_fatpipe_;
  std::unordered_map<std::uint64_t, PlannedRoute> routes_;  // by (source, destination) rank pair
  std::unordered_map<const s4u::Link*, std::size_t> link_ids_;
  std::map<std::vector<double>, std::size_t> kinds_;
};

namespace {

// Union-find over a step's activities: two are joined when they share a contended link or a host.
class Groups {
 public:
  explicit Groups(std::size_t count) : parent_(count) {
    for (std::size_t i = 0; i < count; ++i) parent_[i] = i;
  }
  std::size_t find(std::size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  // The root stays the group's first activity.
  void join(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<std::size_t> parent_;
};

// Reduces `schedule` on the world's hosts (see flows.hpp: "a few flows per step"). A step's activities fall into
// groups that share no contended link or host with one another; two groups with the same signature -- their
// activities in schedule order, each with its bytes and route kind or flops and host speed, each contended link or
// host numbered by first use within the group -- pose SimGrid's max-min solver the same problem, so only the
// first is kept. With `replicate` false every activity is kept (the full flow level, to check the shortcut).
std::shared_ptr<const FlowPlan> make_plan(const CollectiveSchedule& schedule, const World& world, RouteCache& cache,
                                          bool replicate) {
  auto plan = std::make_shared<FlowPlan>();
  const std::size_t steps = schedule.steps.size();
  plan->transfers.resize(steps);
  plan->computes.resize(steps);
  plan->released.resize(steps + 1);
  plan->sent_bytes.assign(schedule.leave_after.size(), 0);
  for (const auto& step : schedule.steps) {
    for (const auto& transfer : step.transfers)
      plan->sent_bytes[static_cast<std::size_t>(transfer.source)] += transfer.bytes;
  }
  for (std::size_t rank = 0; rank < schedule.leave_after.size(); ++rank) {
    plan->released[static_cast<std::size_t>(schedule.leave_after[rank])].push_back(static_cast<int>(rank));
  }
  std::vector<const PlannedRoute*> routes;
  for (std::size_t k = 0; k < steps; ++k) {
    const ScheduleStep& step = schedule.steps[k];
    std::vector<FlowPlan::Compute> computes;  // those that cost anything (as SimgridComm::compute)
    for (const auto& compute : step.computes) {
      if (compute.flops > 0) computes.push_back({compute.rank, compute.flops});
    }
    if (!replicate) {
      plan->transfers[k] = step.transfers;
      plan->computes[k] = std::move(computes);
      continue;
    }
    // Activities 0..T-1 are the transfers, T.. the computes. Resources: contended links by RouteCache id, hosts
    // after them by rank.
    const std::size_t transfers = step.transfers.size();
    routes.clear();
    for (const auto& transfer : step.transfers)
      routes.push_back(&cache.route(world, transfer.source, transfer.destination));
    const std::size_t links = cache.link_count();
    Groups groups(transfers + computes.size());
    std::unordered_map<std::size_t, std::size_t> first_user;  // resource -> the first activity using it
    const auto use = [&](std::size_t resource, std::size_t activity) {
      const auto [found, inserted] = first_user.emplace(resource, activity);
      if (!inserted) groups.join(found->second, activity);
    };
    for (std::size_t i = 0; i < transfers; ++i) {
      for (const std::size_t link : routes[i]->contended) use(link, i);
    }
    for (std::size_t j = 0; j < computes.size(); ++j) {
      use(links + static_cast<std::size_t>(computes[j].rank), transfers + j);
    }

    std::map<std::size_t, std::vector<double>> signatures;                     // by group root, in schedule order
    std::map<std::size_t, std::unordered_map<std::size_t, double>> numbering;  // by group root: resource -> local id
    const auto number = [&](std::size_t root, std::size_t resource) {
      auto& ids = numbering[root];
      return ids.emplace(resource, static_cast<double>(ids.size())).first->second;
    };
    for (std::size_t i = 0; i < transfers; ++i) {
      const std::size_t root = groups.find(i);
      auto& signature = signatures[root];
      // A loopback transfer is left to SimGrid alone: its signature is its own.
      if (routes[i]->loopback) signature.push_back(-1.0 - static_cast<double>(i));
      signature.insert(signature.end(), {0.0, static_cast<double>(step.transfers[i].bytes),
                                         static_cast<double>(routes[i]->kind), routes[i]->shares_cores ? 1.0 : 0.0});
      for (const std::size_t link : routes[i]->contended) signature.push_back(number(root, link));
    }
    for (std::size_t j = 0; j < computes.size(); ++j) {
      const std::size_t root = groups.find(transfers + j);
      signatures[root].insert(signatures[root].end(),
                              {1.0, computes[j].flops, world.host(computes[j].rank)->get_speed(),
                               number(root, links + static_cast<std::size_t>(computes[j].rank))});
    }
    std::set<std::vector<double>> represented;
    std::vector<bool> kept(transfers + computes.size(), false);  // by group root
    for (auto& [root, signature] : signatures) kept[root] = represented.insert(std::move(signature)).second;
    for (std::size_t i = 0; i < transfers; ++i) {
      if (kept[groups.find(i)]) plan->transfers[k].push_back(step.transfers[i]);
    }
    for (std::size_t j = 0; j < computes.size(); ++j) {
      if (kept[groups.find(transfers + j)]) plan->computes[k].push_back(computes[j]);
    }
  }
  return plan;
}

}  // namespace

FlowCollectives::FlowCollectives(World& world, bool fold_fatpipe_flows, bool replicate)
    : world_(world),
      replicate_(replicate),
      joined_(static_cast<std::size_t>(world.size()), 0),
      routes_(std::make_unique<RouteCache>(fold_fatpipe_flows)) {
  gates_.reserve(static_cast<std::size_t>(world.size()));
  for (int rank = 0; rank < world.size(); ++rank) gates_.push_back(s4u::Semaphore::create(0));
}

FlowCollectives::~FlowCollectives() = default;

std::shared_ptr<const FlowPlan> FlowCollectives::plan_for(const CollectiveCall& call,
                                                          const std::function<void(Comm&)>& body) {
  const auto key = std::make_pair(call.name, call.key);
  if (const auto found = plans_.find(key); found != plans_.end()) return found->second;
  auto plan = make_plan(record_schedule(call, world_.size(), body, world_.nodes()), world_, *routes_, replicate_);
  plans_.emplace(key, plan);
  return plan;
}

void FlowCollectives::join(SimgridComm& comm, const CollectiveCall& call, const std::function<void(Comm&)>& body) {
  const int rank = comm.rank();
  const double begin_s = comm.now_s();
  const std::uint64_t sequence = joined_[static_cast<std::size_t>(rank)]++;
  auto& slot = instances_[sequence];
  if (!slot) {
    slot = std::make_shared<Instance>();
    slot->call = call;
    // One kernel timer per collective rather than a timed wait per rank: timed waits cost SimGrid a timer each,
    // 40% of a collective's wall time at 4352 ranks. The timer runs in maestro, where releasing a gate is allowed.
    const double timeout = world_.simgrid_timeout();
    if (timeout >= 0) {
      slot->deadline = ::simgrid::kernel::timer::Timer::set(
          begin_s + timeout, [this, instance = std::weak_ptr<Instance>(slot)] { expire(instance.lock()); });
    }
  } else if (!(slot->call == call)) {
    throw CommError("rank " + std::to_string(rank) + " called collective #" + std::to_string(sequence) + " as " +
                    call.name + " (" + call.key + ", tag " + std::to_string(call.tag) +
                    ") but another rank called it as " + slot->call.name + " (" + slot->call.key + ", tag " +
                    std::to_string(slot->call.tag) + ")");
  }
  const std::shared_ptr<Instance> instance = slot;
  instance->joined.push_back(rank);
  if (static_cast<int>(instance->joined.size()) == world_.size()) {
    if (instance->deadline != nullptr) instance->deadline->remove();
    instance->deadline = nullptr;
    // The last rank in: derive the plan (a simcall-free computation, so no other actor runs meanwhile) and hand
    // the replay to a conductor actor, so that this rank can be released at its own time like the others.
    instance->plan = plan_for(call, body);
    s4u::Actor::create("collective-" + std::to_string(sequence), world_.host(rank), [this, sequence, rank] {
      try {
        conduct(sequence);
      } catch (const ::simgrid::ForcefulKillException&) {
        throw;
      } catch (const ::simgrid::Exception& failure) {
        world_.fail(rank, std::make_exception_ptr(CommError("collective #" + std::to_string(sequence) +
                                                            " failed in SimGrid: " + failure.what())));
      } catch (const Error&) {
        world_.fail(rank, std::current_exception());
      }
    });
  }
  Waiting waiting;
  waiting.kind = Waiting::Kind::kCollective;
  waiting.name = call.name + " (" + call.key + ")";
  world_.set_waiting(comm, waiting);
  gates_[static_cast<std::size_t>(rank)]->acquire();
  if (instance->timed_out) {
    int missing = 0;
    while (std::find(instance->joined.begin(), instance->joined.end(), missing) != instance->joined.end()) ++missing;
    throw TimeoutError(waited_text(rank, comm.now_s() - begin_s,
                                   "for " + describe(waiting) + " (" + std::to_string(instance->joined.size()) +
                                       " of " + std::to_string(world_.size()) + " ranks joined; rank " +
                                       std::to_string(missing) + " did not)"));
  }
  world_.clear_waiting(comm);
  comm.count_sent(instance->plan->sent_bytes[static_cast<std::size_t>(rank)]);
  comm.charge(call.category, comm.now_s() - begin_s);
}

void FlowCollectives::expire(const std::shared_ptr<Instance>& instance) {
  if (!instance) return;
  instance->deadline = nullptr;  // SimGrid deletes a timer once it fired
  instance->timed_out = true;
  for (const int rank : instance->joined) gates_[static_cast<std::size_t>(rank)]->release();
}

void FlowCollectives::conduct(std::uint64_t sequence) {
  const auto found = instances_.find(sequence);
  DSGD_ENFORCE(found != instances_.end(), "no collective #" + std::to_string(sequence) + " to conduct");
  const std::shared_ptr<const FlowPlan> plan = found->second->plan;
  instances_.erase(found);
  const auto release = [this](const std::vector<int>& ranks) {
    for (const int rank : ranks) gates_[static_cast<std::size_t>(rank)]->release();
  };
  release(plan->released[0]);
  // Typed, not s4u::ActivityPtr: in SimGrid 3.32, waiting on a host-to-host comm of 0 bytes through the Activity
  // base never returns, while Comm::wait() does.
  std::vector<s4u::CommPtr> transfers;
  std::vector<s4u::ExecPtr> computes;
  for (std::size_t k = 0; k < plan->transfers.size(); ++k) {
    transfers.clear();
    computes.clear();
    for (const auto& transfer : plan->transfers[k]) {
      transfers.push_back(
          s4u::Comm::sendto_async(world_.host(transfer.source), world_.host(transfer.destination), transfer.bytes));
    }
    for (const auto& compute : plan->computes[k]) {
      auto exec = s4u::Exec::init();
      exec->set_flops_amount(compute.flops)->set_host(world_.host(compute.rank));
      exec->start();
      computes.push_back(exec);
    }
    for (const auto& transfer : transfers) transfer->wait();
    for (const auto& compute : computes) compute->wait();
    release(plan->released[k + 1]);
  }
}

}  // namespace dsgd::simulate
