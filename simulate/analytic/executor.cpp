#include "simulate/analytic/executor.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/collectives.hpp"
#include "core/memory.hpp"
#include "simulate/analytic/route_model.hpp"
#include "simulate/analytic/tree_schedules.hpp"
#include "simulate/collective_schedule.hpp"
#include "simulate/compute_cost.hpp"

namespace dsgd::simulate {

namespace {

// A collective's times, relative to its start (when the last node is ready).
struct CollectivePlan {
  double rank0_s = 0;                  // until rank 0 leaves it
  std::vector<double> node_leave_s;    // per node: until the last of its ranks leaves it
  std::uint64_t rank0_sent_bytes = 0;  // what rank 0 sends in it (Comm::bytes_sent)
};

// Prices a schedule handed over activity by activity (recorded, or enumerated by simulate/analytic/tree_schedules.hpp):
// a step takes as long as its slowest transfer -- the route's latencies plus bytes over its narrowest bandwidth --
// or compute (the flops at the host's speed, as the flow level executes them); a node leaves when the last step
// one of its ranks takes part in ends. Step ends never decrease, so a node's latest step gives its latest end.
class PlanPricer final : public ScheduleVisitor {
 public:
  explicit PlanPricer(const RouteModel& routes)
      : routes_(routes), node_steps_(static_cast<std::size_t>(routes.nodes()), 0) {}

  void transfer(int step, int source, int destination, std::size_t bytes) override {
    double& step_s = at(step);
    step_s = std::max(step_s, routes_.message_s(source, destination, static_cast<double>(bytes)));
    if (source == 0) rank0_sent_bytes_ += bytes;
  }
  void compute(int step, int rank, double flops) override {
    double& step_s = at(step);
    step_s = std::max(step_s, flops / routes_.unit_site(rank).peak_flops);
  }
  void leave(int rank, int steps) override {
    int& node_steps = node_steps_[static_cast<std::size_t>(routes_.node_of(rank))];
    node_steps = std::max(node_steps, steps);
    if (rank == 0) rank0_steps_ = steps;
  }

  CollectivePlan plan() const {
    std::vector<double> end_s(step_s_.size(), 0.0);  // when each step ends
    double at_s = 0;
    for (std::size_t k = 0; k < step_s_.size(); ++k) {
      at_s += step_s_[k];
      end_s[k] = at_s;
    }
    const auto after = [&end_s](int steps) { return steps > 0 ? end_s[static_cast<std::size_t>(steps - 1)] : 0.0; };
    CollectivePlan plan;
    plan.rank0_s = after(rank0_steps_);
    plan.rank0_sent_bytes = rank0_sent_bytes_;
    plan.node_leave_s.reserve(node_steps_.size());
    for (const int steps : node_steps_) plan.node_leave_s.push_back(after(steps));
    return plan;
  }

 private:
  double& at(int step) {
    if (static_cast<std::size_t>(step) >= step_s_.size()) step_s_.resize(static_cast<std::size_t>(step) + 1, 0.0);
    return step_s_[static_cast<std::size_t>(step)];
  }

  const RouteModel& routes_;
  std::vector<double> step_s_;   // per step: its slowest activity
  std::vector<int> node_steps_;  // per node: the steps until its last rank leaves
  int rank0_steps_ = 0;
  std::uint64_t rank0_sent_bytes_ = 0;
};

class AnalyticComm final : public Comm {
 public:
  AnalyticComm(const platforms::Platform& platform, const WorldOptions& world, const SimulationOptions& options)
      : size_(world.size),
        routes_(platform, world.size, options.placement),
        noise_(platform.noise, options.noise_seed),
        trace_events_(options.trace_events),
        recorded_schedules_(options.analytic_recorded_schedules) {
    nodes_ = routes_.nodes();
    rank_nodes_ = emulated_nodes(world);
    if (rank_nodes_.empty()) {
      rank_nodes_.reserve(static_cast<std::size_t>(size_));
      for (int rank = 0; rank < size_; ++rank) rank_nodes_.push_back(routes_.node_of(rank));
    }
    ready_s_.assign(static_cast<std::size_t>(nodes_), 0.0);
    // Node 0's ranks stand for every node's (the last node may hold fewer; its ranks are alike).
    for (const auto& site : routes_.placed_sites()) {
      if (site.node != 0) break;
      node_sites_.push_back(&site);
    }
  }

  int rank() const override { return 0; }
  int size() const override { return size_; }
  double now_s() const override { return clock_s_; }
  std::string_view executor() const override { return "analytic"; }
  bool has_payload() const override { return false; }
  int node_of(int rank) const override { return node_in(rank_nodes_, rank); }

  RequestPtr isend(int destination, Tag tag, const void*, std::size_t bytes, Category) override {
    throw UnavailableError(refusal("sends " + std::to_string(bytes) + " bytes to rank " + std::to_string(destination) +
                                   " (tag " + std::to_string(tag) + ")"));
  }
  RequestPtr irecv(int source, Tag tag, void*, std::size_t bytes, Category) override {
    throw UnavailableError(refusal("receives " + std::to_string(bytes) + " bytes from " + peer_text(source) + " (tag " +
                                   std::to_string(tag) + ")"));
  }
  std::shared_ptr<SharedVector> shared_vector(const std::string& name, std::size_t, std::span<const float>) override {
    throw UnavailableError(refusal("opens shared vector '" + name + "'"));
  }
  std::shared_ptr<DatagramEndpoint> datagrams(const DatagramOptions&) override {
    throw UnavailableError(refusal("opens a datagram channel"));
  }

  void compute(const ComputeStep& step) override {
    DSGD_ENFORCE(step.flops >= 0, "compute step with negative flops");
    const std::uint64_t index = compute_steps_++;
    double slowest_s = 0;
    for (const RankSite* site : node_sites_) slowest_s = std::max(slowest_s, all_computing_seconds(*site, step));
    // Each node's factor at the time its step starts (node 0's is rank 0's: drawn once, as a node's ranks share it).
    double own_noise = 1;
    for (int node = 0; node < nodes_; ++node) {
      double& ready_s = ready_s_[static_cast<std::size_t>(node)];
      const double noise = noise_.factor(node, index, node == 0 ? clock_s_ : ready_s);
      if (node == 0) own_noise = noise;
      ready_s += slowest_s * noise;
    }
    const double own_s = all_computing_seconds(routes_.placed_sites().front(), step) * own_noise;
    clock_s_ += own_s;
    charge(step.category, own_s);
  }

  void run_collective(const CollectiveCall& call, const std::function<void(Comm&)>& body) override {
    const CollectivePlan& plan = plan_for(call, body);
    const double start_s = std::max(clock_s_, *std::max_element(ready_s_.begin(), ready_s_.end()));
    const double inside_s = start_s - clock_s_ + plan.rank0_s;
    clock_s_ = start_s + plan.rank0_s;
    for (std::size_t node = 0; node < ready_s_.size(); ++node) ready_s_[node] = start_s + plan.node_leave_s[node];
    count_sent(plan.rank0_sent_bytes);
    charge(call.category, inside_s);
  }

  std::vector<TimelineSpan> timeline;
  std::size_t timeline_dropped = 0;

 protected:
  void charged(Category category, double seconds) override {
    if (!(seconds > 0)) return;
    if (timeline.size() < trace_events_) {
      timeline.push_back({0, category, clock_s_ - seconds, seconds});
    } else {
      ++timeline_dropped;
    }
  }

 private:
  std::string refusal(const std::string& what) const {
    return "the analytic level runs rank 0 alone, as every rank of " + std::to_string(size_) + ", and rank 0 " + what +
           " outside a collective; simulate this algorithm at the message or flow level";
  }

  const CollectivePlan& plan_for(const CollectiveCall& call, const std::function<void(Comm&)>& body) {
    const auto key = std::make_pair(call.name, call.key);
    if (const auto found = plans_.find(key); found != plans_.end()) return found->second;
    if (call.name == allreduce_call_name(AllreduceAlgorithm::kRing)) {
      return plans_.emplace(key, ring_plan(call.count)).first->second;
    }
    PlanPricer pricer(routes_);
    if (!recorded_schedules_ && has_tree_schedule(call)) {
      // The binomial trees' steps in closed form: no schedule of P transfers held (docs/simulation.md).
      visit_tree_schedule(call, size_, pricer);
    } else {
      const CollectiveSchedule schedule = record_schedule(call, size_, body, rank_nodes_);
      for (std::size_t k = 0; k < schedule.steps.size(); ++k) {
        const int step = static_cast<int>(k);
        for (const auto& t : schedule.steps[k].transfers) pricer.transfer(step, t.source, t.destination, t.bytes);
        for (const auto& c : schedule.steps[k].computes) pricer.compute(step, c.rank, c.flops);
      }
      for (std::size_t rank = 0; rank < schedule.leave_after.size(); ++rank) {
        pricer.leave(static_cast<int>(rank), schedule.leave_after[rank]);
      }
    }
    return plans_.emplace(key, pricer.plan()).first->second;
  }

  // The ring allreduce of core/collectives.cpp in closed form (its recorded schedule has P^2 transfers): P - 1
  // steps of the reduce-scatter, each a transfer of the largest chunk to the right neighbour and its addition,
  // then P - 1 transfers of the allgather; a step takes as long as its slowest neighbour pair. Every rank leaves
  // with the last step.
  CollectivePlan ring_plan(std::size_t count) const {
    const auto ranks = static_cast<std::size_t>(size_);
    const double chunk = static_cast<double>((count + ranks - 1) / ranks);
    double transfer_s = 0;
    double add_s = 0;
    for (int rank = 0; rank < size_; ++rank) {
      transfer_s = std::max(transfer_s, routes_.message_s(rank, (rank + 1) % size_, chunk * sizeof(float)));
      add_s = std::max(add_s, chunk / routes_.unit_site(rank).peak_flops);
    }
    const double total_s = (size_ - 1) * (transfer_s + add_s) + (size_ - 1) * transfer_s;
    // Rank 0 sends every chunk but chunk 1 in the reduce-scatter and every chunk but chunk 2 in the allgather.
    const auto chunk_floats = [&](std::size_t c) { return count * (c + 1) / ranks - count * c / ranks; };
    const std::uint64_t sent = (2 * count - chunk_floats(1 % ranks) - chunk_floats(2 % ranks)) * sizeof(float);
    return {total_s, std::vector<double>(static_cast<std::size_t>(nodes_), total_s), sent};
  }

  int size_;
  RouteModel routes_;
  ComputeNoise noise_;
  std::size_t trace_events_;
  bool recorded_schedules_;  // SimulationOptions::analytic_recorded_schedules
  int nodes_ = 0;
  std::vector<int> rank_nodes_;  // per rank: Comm::node_of
  std::vector<const RankSite*> node_sites_;
  std::vector<double> ready_s_;  // per node: when its slowest rank is ready for the next collective
  double clock_s_ = 0;           // rank 0's
  std::uint64_t compute_steps_ = 0;
  std::map<std::pair<std::string, std::string>, CollectivePlan> plans_;
};

// Per rank only its node is held (Comm::node_of; RouteModel places the first node's ranks alone): checked against
// the memory available before it is allocated. A recorded schedule checks its own (record_schedule).
void check_world_memory(int ranks) {
  const double per_rank = sizeof(int);
  check_available_memory(static_cast<double>(ranks) * per_rank,
                         "analytic level: " + std::to_string(ranks) + " ranks need an estimated ",
                         " for their node map (" + bytes_text(per_rank) + " per rank)");
}

}  // namespace

SimulationResult analytic::run(const platforms::Platform& platform, const WorldOptions& world,
                               const WorkerFunction& worker, const SimulationOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (world.payload) throw InputError("analytic fidelity simulates sizes only: set WorldOptions::payload to false");
  if (options.placement.master_on_host) {
    throw InputError("analytic fidelity runs rank 0 as every rank's representative: a master on the host is not one");
  }
  check_world_memory(world.size);
  AnalyticComm comm(platform, world, options);
  const auto setup_end = std::chrono::steady_clock::now();
  worker(comm);
  SimulationResult result;
  result.fidelity = Fidelity::kAnalytic;
  result.time_s = comm.now_s();
  result.per_rank = {comm.breakdown()};
  if (options.collect) result.collected = options.collect();
  result.events = std::move(comm.timeline);
  result.events_dropped = comm.timeline_dropped;
  const auto end = std::chrono::steady_clock::now();
  result.setup_wall_s = std::chrono::duration<double>(setup_end - start).count();
  result.run_wall_s = std::chrono::duration<double>(end - setup_end).count();
  result.wall_s = std::chrono::duration<double>(end - start).count();
  return result;
}

}  // namespace dsgd::simulate
