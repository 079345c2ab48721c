// Wall time (and memory) of the scaling goals, which belong to benchmarks, not timed tests:
//   BM_Table4Sweep     seed 000 Table 4's prediction sweep: its two models x seven sizes (68 -> 4352 cores of
//                      core-level KNL nodes on the dragonfly, 4 ranks per chip), 3 steady-state iterations each,
//                      the levels chosen by scale. Goal: <= 10 s.
//   BM_Table4SweepOneRankPerCore  the same sweep at one rank per core (68 -> 4352 ranks, the mesh's level: flow from
//                      512 ranks), alternating, round by round, today's way (a step's alike groups of activities
//                      simulated once, simulate/simgrid/flows.hpp; the 14 simulations side by side on every core) and
//                      the reference (every activity simulated, one simulation at a time); the answers must agree
//                      within 0.5%. Goal: the sweep <= 5 s.
//   BM_MillionCores    one weak-scaling point of 1,000,008 cores (14,706 KNL nodes of knl-aries-1m) at the analytic
//                      level, with Table 4's first case; ranks_per_node 4 (seed 000 sec. 6.2) or 0 (one rank per
//                      core: 1,000,008 ranks). Goal: <= 60 s and <= 8 GB (max_rss_GB: the process's peak so far).
//   BM_TenMillionCores one weak-scaling point of 10,000,000 cores, one rank per core (147,059 KNL nodes of
//                      knl-aries-10m), analytic, Table 4's first case. Goal: <= 60 s and <= 16 GB.
//   BM_TreeShortcut    the analytic level's two ways of pricing the binomial trees, alternated on one weak-scaling
//                      point at one rank per core (the argument: KNL nodes): enumerated in closed form (the
//                      default) and recorded (SimulationOptions::analytic_recorded_schedules). Reports each side's
//                      wall seconds, their ratio, and the relative difference of seconds per iteration and
//                      efficiency (the goal: under 0.5%; the enumeration is exact, so 0).
//
//   ninja -C build scaling_bench && build/simulate/bench/scaling_bench
//   (one at a time, so that max_rss_GB is its own: --benchmark_filter=TenMillion)

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "algorithms/studies.hpp"
#include "platforms/catalog.hpp"
#include "simulate/bench/cpu_time.hpp"
#include "simulate/weak_scaling.hpp"

namespace {

using namespace dsgd;

double max_rss_GB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024 / 1e9;  // ru_maxrss is in KiB on Linux
}

simulate::ScalingOptions table4_case(const algorithms::ScalingStudyCase& row) {
  simulate::ScalingOptions options;
  options.algorithm = row.algorithm;
  options.model = row.model;
  options.hyper.batch = row.batch;
  options.iterations = 3;
  options.ranks_per_node = 4;
  return options;
}

void BM_Table4Sweep(benchmark::State& state) {
  const auto& study = algorithms::find_scaling_study("table4");
  const auto platform = platforms::catalog_platform(study.platform);
  int simulations = 0;
  for (auto _ : state) {
    simulations = 0;
    for (const auto& row : study.cases) {
      auto options = table4_case(row);
      for (const auto& point : study.points) options.workers.push_back(point.workers);
      benchmark::DoNotOptimize(simulate::simulate_weak_scaling(platform, options));
      simulations += static_cast<int>(options.workers.size());
    }
  }
  state.counters["simulations"] = simulations;
}

// Wall and CPU seconds (this process and its waited-for children: the forked simulations) of `run`.
struct Cost {
  double wall_s = 0;
  double cpu_s = 0;
};

using bench::cpu_seconds;

template <typename Run>
Cost cost_of(Run&& run) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = cpu_seconds();
  run();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), cpu_seconds() - cpu_start};
}

// Seconds per iteration of every point of Table 4's two sweeps at one rank per core: with the shortcuts, the points
// side by side; without, every activity simulated and one point at a time.
std::vector<double> table4_one_rank_per_core(bool shortcuts) {
  const auto& study = algorithms::find_scaling_study("table4");
  const auto platform = platforms::catalog_platform(study.platform);
  std::vector<simulate::ScalingOptions> sweeps;
  for (const auto& row : study.cases) {
    auto options = table4_case(row);
    options.ranks_per_node = 0;
    options.flow_replicas = shortcuts;
    for (const auto& point : study.points) options.workers.push_back(point.workers * 17);  // 17 cores per worker
    sweeps.push_back(options);
  }
  std::vector<double> seconds;
  for (const auto& points : simulate::simulate_weak_scaling(platform, sweeps, shortcuts ? 0 : 1)) {
    for (const auto& point : points) seconds.push_back(point.seconds_per_iteration);
  }
  return seconds;
}

void BM_Table4SweepOneRankPerCore(benchmark::State& state) {
  constexpr int kRounds = 2;
  Cost fast;
  Cost full;
  double largest_difference = 0;
  for (auto _ : state) {
    for (int round = 0; round < kRounds; ++round) {
      std::vector<double> shortcut;
      std::vector<double> every;
      const Cost a = cost_of([&] { shortcut = table4_one_rank_per_core(true); });
      const Cost b = cost_of([&] { every = table4_one_rank_per_core(false); });
      fast = {fast.wall_s + a.wall_s / kRounds, fast.cpu_s + a.cpu_s / kRounds};
      full = {full.wall_s + b.wall_s / kRounds, full.cpu_s + b.cpu_s / kRounds};
      for (std::size_t i = 0; i < shortcut.size(); ++i)
        largest_difference = std::max(largest_difference, std::abs(shortcut[i] / every[i] - 1));
    }
  }
  state.counters["wall_s"] = fast.wall_s;
  state.counters["cpu_s"] = fast.cpu_s;
  state.counters["reference_wall_s"] = full.wall_s;
  state.counters["reference_cpu_s"] = full.cpu_s;
  state.counters["speed_up"] = full.wall_s / fast.wall_s;
  state.counters["largest_difference"] = largest_difference;
}

void BM_MillionCores(benchmark::State& state) {
  const auto& study = algorithms::find_scaling_study("table4");
  const auto platform = platforms::catalog_platform("knl-aries-1m");
  auto options = table4_case(study.cases.front());
  options.ranks_per_node = static_cast<int>(state.range(0));
  const int cores = 14706 * 68;
  options.workers = {options.ranks_per_node > 0 ? cores / (68 / options.ranks_per_node) : cores};
  double efficiency = 0;
  for (auto _ : state) {
    options.workers.insert(options.workers.begin(), options.ranks_per_node > 0 ? options.ranks_per_node : 68);
    const auto points = simulate::simulate_weak_scaling(platform, options);
    options.workers.erase(options.workers.begin());
    efficiency = points.back().efficiency;
  }
  state.counters["cores"] = cores;
  state.counters["ranks"] = options.workers.front();
  state.counters["efficiency"] = efficiency;
  state.counters["max_rss_GB"] = max_rss_GB();
}

// One weak-scaling point of `nodes` full KNL nodes at one rank per core, after a one-node point for the efficiency.
simulate::ScalingPoint one_rank_per_core(const platforms::Platform& platform, int nodes, bool recorded_schedules) {
  const auto& study = algorithms::find_scaling_study("table4");
  auto options = table4_case(study.cases.front());
  options.ranks_per_node = 0;
  const int cores = platform.nodes.cpu.cores();
  options.workers = {cores, nodes * cores};
  options.analytic_recorded_schedules = recorded_schedules;
  return simulate::simulate_weak_scaling(platform, options).back();
}

void BM_TenMillionCores(benchmark::State& state) {
  const auto platform = platforms::catalog_platform("knl-aries-10m");
  const auto& study = algorithms::find_scaling_study("table4");
  auto options = table4_case(study.cases.front());
  options.ranks_per_node = 0;
  const int cores = 10'000'000;
  options.workers = {platform.nodes.cpu.cores(), cores};
  simulate::ScalingPoint point;
  for (auto _ : state) point = simulate::simulate_weak_scaling(platform, options).back();
  state.counters["cores"] = cores;
  state.counters["ranks"] = point.ranks;
  state.counters["nodes"] = point.nodes;
  state.counters["seconds_per_iteration"] = point.seconds_per_iteration;
  state.counters["efficiency"] = point.efficiency;
  state.counters["max_rss_GB"] = max_rss_GB();
  state.SetLabel(std::string(simulate::to_string(point.fidelity)));
}

void BM_TreeShortcut(benchmark::State& state) {
  const auto platform = platforms::catalog_platform("knl-aries-1m");
  const int nodes = static_cast<int>(state.range(0));
  double shortcut_s = 0;
  double recorded_s = 0;
  simulate::ScalingPoint shortcut;
  simulate::ScalingPoint recorded;
  for (auto _ : state) {
    const auto timed = [](const auto& run) {
      const auto start = std::chrono::steady_clock::now();
      run();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    shortcut_s += timed([&] { shortcut = one_rank_per_core(platform, nodes, /*recorded_schedules=*/false); });
    recorded_s += timed([&] { recorded = one_rank_per_core(platform, nodes, /*recorded_schedules=*/true); });
  }
  const auto relative = [](double a, double b) { return std::abs(a - b) / std::abs(b); };
  const double iterations = static_cast<double>(state.iterations());
  state.counters["ranks"] = shortcut.ranks;
  state.counters["shortcut_wall_s"] = shortcut_s / iterations;
  state.counters["recorded_wall_s"] = recorded_s / iterations;
  state.counters["recorded_over_shortcut"] = recorded_s / shortcut_s;
  state.counters["seconds_per_iteration"] = shortcut.seconds_per_iteration;
  state.counters["iteration_rel_diff"] = relative(shortcut.seconds_per_iteration, recorded.seconds_per_iteration);
  state.counters["efficiency_rel_diff"] = relative(shortcut.efficiency, recorded.efficiency);
  state.counters["max_rss_GB"] = max_rss_GB();
}

BENCHMARK(BM_Table4Sweep)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Table4SweepOneRankPerCore)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_MillionCores)
    ->ArgName("ranks_per_node")
    ->Arg(4)
    ->Arg(0)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK(BM_TenMillionCores)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
// 1,471 nodes: 100,028 ranks, a few seconds recorded; 14,706 nodes: BM_MillionCores' 1,000,008.
BENCHMARK(BM_TreeShortcut)
    ->ArgName("nodes")
    ->Arg(1471)
    ->Arg(14706)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
