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

namespace {

// Union-find over a step's activities: two are joined when they share a link or a host.
class Groups {
 public:
  explicit Groups(std::size_t count) : parent_(count) {
    for (std::size_t i = 0; i < count; ++i) parent_[i] = i;
  }
  std::size_t find(std::size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void join(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<std::size_t> parent_;
};

// Reduces `schedule` on the world's hosts (see flows.hpp: "a few flows per step"). A step's activities fall into
// groups that share no link or host with one another; two groups with the same signature -- their activities' bytes
// or flops in schedule order, each route's links numbered by first use within the group with their parameters, each
// host's speed -- pose SimGrid's max-min solver the same problem, so only the first of them is kept. With `replicate`
// false every activity is kept (the full flow level, against which the shortcut is checked).
std::shared_ptr<const FlowPlan> make_plan(const CollectiveSchedule& schedule, const World& world, bool replicate) {
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
  std::vector<std::vector<s4u::Link*>> routes;
  for (std::size_t k = 0; k < steps; ++k) {
    const ScheduleStep& step = schedule.steps[k];
    std::vector<FlowPlan::Compute> computes;  // those that cost anything (as SimgridComm::compute)
    for (const auto& compute : step.computes) {
      if (compute.flops > 0) computes.push_back({compute.rank, compute.flops});
    }
    if (!replicate) {
      plan->transfers[k] = step.transfers;
      plan->computes[k] = computes;
      continue;
    }
    // Activities 0..T-1 are the transfers, T.. the computes; a loopback transfer (no route) is left to SimGrid
    // alone: a group of its own that is never replicated.
    const std::size_t transfers = step.transfers.size();
    Groups groups(transfers + computes.size());
    std::unordered_map<const void*, std::size_t> first_user;  // a link or host: the first activity using it
    const auto use = [&](const void* resource, std::size_t activity) {
      const auto [found, inserted] = first_user.emplace(resource, activity);
      if (!inserted) groups.join(found->second, activity);
    };
    routes.assign(transfers, {});
    for (std::size_t i = 0; i < transfers; ++i) {
      const auto& transfer = step.transfers[i];
      double latency_s = 0;
      world.host(transfer.source)->route_to(world.host(transfer.destination), routes[i], &latency_s);
      for (const auto* link : routes[i]) {
        // A fat pipe gives every flow its whole bandwidth: flows crossing one do not contend there.
        if (link->get_sharing_policy() != s4u::Link::SharingPolicy::FATPIPE) use(link, i);
      }
    }
    for (std::size_t j = 0; j < computes.size(); ++j) use(world.host(computes[j].rank), transfers + j);

    std::map<std::size_t, std::vector<double>> signatures;                  // by group root, built in schedule order
    std::map<std::size_t, std::unordered_map<const void*, int>> numbering;  // by group root: resource -> local id
    const auto number = [&](std::size_t root, const void* resource) {
      auto& ids = numbering[root];
      return static_cast<double>(ids.emplace(resource, static_cast<int>(ids.size())).first->second);
    };
    for (std::size_t i = 0; i < transfers; ++i) {
      const auto& transfer = step.transfers[i];
      const std::size_t root = groups.find(i);
      auto& signature = signatures[root];
      if (routes[i].empty()) signature.push_back(-1.0 - static_cast<double>(i));  // unique: never replicated
      signature.insert(
          signature.end(),
          {0.0, static_cast<double>(transfer.bytes),
           world.transfer_shares_cores(world.host(transfer.source), world.host(transfer.destination)) ? 1.0 : 0.0});
      for (const auto* link : routes[i]) {
        signature.insert(signature.end(), {number(root, link), link->get_bandwidth(), link->get_latency(),
                                           static_cast<double>(link->get_sharing_policy())});
      }
    }
    for (std::size_t j = 0; j < computes.size(); ++j) {
      const s4u::Host* host = world.host(computes[j].rank);
      const std::size_t root = groups.find(transfers + j);
      auto& signature = signatures[root];
      signature.insert(signature.end(), {1.0, computes[j].flops, number(root, host), host->get_speed()});
    }
    std::set<std::vector<double>> represented;
    std::vector<bool> kept_group(transfers + computes.size(), false);
    for (auto& [root, signature] : signatures) kept_group[root] = represented.insert(std::move(signature)).second;
    for (std::size_t i = 0; i < transfers; ++i) {
      if (kept_group[groups.find(i)]) plan->transfers[k].push_back(step.transfers[i]);
    }
    for (std::size_t j = 0; j < computes.size(); ++j) {
      if (kept_group[groups.find(transfers + j)]) plan->computes[k].push_back(computes[j]);
    }
  }
  return plan;
}

}  // namespace

FlowCollectives::FlowCollectives(World& world) : world_(world), joined_(static_cast<std::size_t>(world.size()), 0) {
  gates_.reserve(static_cast<std::size_t>(world.size()));
  for (int rank = 0; rank < world.size(); ++rank) gates_.push_back(s4u::Semaphore::create(0));
}

FlowCollectives::~FlowCollectives() = default;

std::shared_ptr<const FlowPlan> FlowCollectives::plan_for(const CollectiveCall& call,
                                                          const std::function<void(Comm&)>& body) {
  const auto key = std::make_pair(call.name, call.key);
  if (const auto found = plans_.find(key); found != plans_.end()) return found->second;
  auto plan = make_plan(record_schedule(call, world_.size(), body, world_.nodes()), world_, replicate_);
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
                    call.name + " (" + call.key + ") but another rank called it as " + slot->call.name + " (" +
                    slot->call.key + ")");
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
