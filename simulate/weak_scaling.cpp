#include "simulate/weak_scaling.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "algorithms/runner.hpp"
#include "core/layer_kernels.hpp"
#include "core/model_zoo.hpp"
#include "simulate/compute_cost.hpp"
#include "simulate/concurrent.hpp"

namespace dsgd::simulate {

namespace {

// One sweep's checks and its points' simulations.
class Sweep {
 public:
  Sweep(const platforms::Platform& platform, const ScalingOptions& options)
      : platform_(platform), options_(options), entry_(algorithms::find_algorithm(options.algorithm)) {
    if (options.workers.empty()) throw InputError("simulate: no world sizes given");
    if (options.iterations < 1) throw InputError("simulate: --iterations must be at least 1");
    if (options.round_iterations < 0) {
      throw InputError("simulate: iterations per round cannot be negative (0: one round): " +
                       std::to_string(options.round_iterations));
    }
    if (options.fidelity == Fidelity::kAnalytic && !symmetric()) {
      throw InputError(
          "simulate: the analytic level needs a synchronous algorithm without a master (every rank doing "
          "what rank 0 does); " +
          options.algorithm + " is not one: use the message or flow level");
    }
    // The layer kernels of a worker's iteration, for saying how the simulation priced them.
    if (options.hyper.batch >= 1) kernels_ = iteration_kernels(build_model(options.model), options.hyper.batch);
  }

  // Whether a world of `workers` workers runs at the analytic level.
  bool analytic(int workers) const {
    const int ranks = workers + (entry_.info.has_master ? options_.hyper.servers : 0);  // algorithms::world_size
    return options_.fidelity == Fidelity::kAnalytic || (options_.fidelity == Fidelity::kAuto && symmetric() &&
                                                        (ranks >= kAnalyticFromRanks || !simgrid_can_build(platform_)));
  }

  ScalingPoint simulate(int workers) const {
    const auto& platform = platform_;
    const auto& options = options_;
    const auto& entry = entry_;
    const auto& kernels = kernels_;
    algorithms::RunOptions run;
    run.algorithm = options.algorithm;
    run.workers = workers;
    run.model = options.model;
    run.hyper = options.hyper;
    run.hyper.period = 1;
    // geeps's buffers are held to the platform's device memory unless the run names a size.
    if (run.hyper.device_memory_bytes == 0) run.hyper.device_memory_bytes = platform.nodes.device_memory_bytes();
    run.budget.iterations = options.iterations;
    run.budget.eval_every = options.round_iterations > 0 ? options.round_iterations : options.iterations;
    algorithms::check_run_options(run);

    SimulationOptions simulation;
    simulation.fidelity = analytic(workers) ? Fidelity::kAnalytic : options.fidelity;
    simulation.placement.ranks_per_node = options.ranks_per_node;
    // A master serves its workers from the host CPU where the workers are devices (seed 000's multi-GPU nodes).
    simulation.placement.master_on_host = entry.info.has_master && platform.nodes.devices_per_node() > 0;
    simulation.placement.host_ranks = std::max(1, run.hyper.servers);
    simulation.noise_seed = options.noise_seed;
    simulation.trace_events = options.trace_events;
    simulation.analytic_recorded_schedules = options.analytic_recorded_schedules;
    simulation.wall_timeout_s = options.wall_timeout_s;
    simulation.fold_fatpipe_flows = options.fold_fatpipe_flows;
    simulation.flow_replicas = options.flow_replicas;
    WorldOptions world;
    world.size = algorithms::world_size(run);
    world.payload = false;
    world.timeout_s = 1e9;  // simulated seconds: an iteration of VGG on one core takes minutes

    algorithms::RunResult result;
    // Serialised in the simulation's process: rank 0's result, which the run fills there.
    simulation.collect = [&result] {
      char text[160];
      std::snprintf(text, sizeof text, "%.17g %lld %.17g %.17g %.17g", result.train_seconds,
                    static_cast<long long>(result.iterations), result.overlapped_comm_s,
                    algorithms::bytes_sent_per_iteration(result).value_or(0),
                    algorithms::bytes_sent_per_iteration(result, /*master=*/true).value_or(-1));
      return std::string(text);
    };
    const auto outcome = simgrid::run(platform, world, algorithms::training_worker(run, {}, &result), simulation);
    double train_seconds = 0;
    long long iterations = 0;
    double overlapped_s = 0;
    ScalingPoint point;
    if (std::sscanf(outcome.collected.c_str(), "%lf %lld %lf %lf %lf", &train_seconds, &iterations, &overlapped_s,
                    &point.bytes_sent_per_iteration, &point.master_bytes_sent_per_iteration) != 5 ||
        iterations <= 0) {
      throw InternalError("simulate: the simulation returned no training time");
    }
    point.workers = workers;
    point.ranks = world.size;
    const int per_node = ranks_per_node(platform, simulation.placement);
    point.nodes = std::max(
        1, (world.size - (simulation.placement.master_on_host ? simulation.placement.host_ranks : 0) + per_node - 1) /
               per_node);
    point.seconds_per_iteration = train_seconds / static_cast<double>(iterations);
    point.fidelity = outcome.fidelity;
    point.per_rank = outcome.per_rank;
    point.exposed_comm_s_per_iteration =
        outcome.per_rank.front()[Category::kGpuGpuPara] / static_cast<double>(iterations);
    point.overlapped_comm_s_per_iteration = overlapped_s / static_cast<double>(iterations);
    point.wall_s = outcome.wall_s;
    point.timeline = outcome.events;
    point.timeline_dropped = outcome.events_dropped;
    // A worker's site: the first unit of the first node (a master, where there is one, sits on the host).
    PlacementOptions worker_placement = simulation.placement;
    worker_placement.master_on_host = false;
    const RankSite worker = place_ranks(platform, 1, worker_placement).front();
    point.compute_pricing = kernel_pricing(worker, ComputeStep{.kernels = kernels}).describe();
    return point;
  }

 private:
  // The analytic level runs rank 0 as every rank's representative: right only when all ranks are alike workers.
  bool symmetric() const { return entry_.info.synchronous && !entry_.info.has_master; }

  const platforms::Platform& platform_;
  const ScalingOptions& options_;
  const algorithms::AlgorithmEntry& entry_;
  std::vector<LayerKernel> kernels_;
};

}  // namespace

std::vector<std::vector<ScalingPoint>> simulate_weak_scaling(const platforms::Platform& platform,
                                                             const std::vector<ScalingOptions>& sweeps, int jobs) {
  std::vector<Sweep> runs;
  runs.reserve(sweeps.size());
  std::vector<std::pair<std::size_t, std::size_t>> tasks;  // (sweep, point)
  bool any_analytic = false;
  for (const auto& options : sweeps) {
    runs.emplace_back(platform, options);
    for (std::size_t i = 0; i < options.workers.size(); ++i) {
      tasks.emplace_back(runs.size() - 1, i);
      any_analytic = any_analytic || runs.back().analytic(options.workers[i]);
    }
  }
  // Each point is a simulation of its own, in a forked process at the message and flow levels: they run side by
  // side on the machine's cores, the largest first. The analytic level runs in this process, so then one at a time
  // (a fork beside it would copy a process in the middle of its work).
  const auto workers = [&](const std::pair<std::size_t, std::size_t>& task) {
    return sweeps[task.first].workers[task.second];
  };
  std::stable_sort(tasks.begin(), tasks.end(), [&](const auto& a, const auto& b) { return workers(a) > workers(b); });
  std::vector<std::vector<ScalingPoint>> out(sweeps.size());
  for (std::size_t s = 0; s < sweeps.size(); ++s) out[s].resize(sweeps[s].workers.size());
  run_concurrently(tasks.size(),
                   any_analytic ? 1
                   : jobs > 0   ? jobs
                                : machine_cores(),
                   [&](std::size_t k) {
                     const auto [sweep, point] = tasks[k];
                     out[sweep][point] = runs[sweep].simulate(workers(tasks[k]));
                   });
  for (auto& points : out) {
    for (auto& point : points) point.efficiency = points.front().seconds_per_iteration / point.seconds_per_iteration;
  }
  return out;
}

std::vector<ScalingPoint> simulate_weak_scaling(const platforms::Platform& platform, const ScalingOptions& options) {
  return simulate_weak_scaling(platform, std::vector<ScalingOptions>{options}, options.jobs).front();
}

}  // namespace dsgd::simulate
