// Wall time (and memory) of the scaling goals, which belong to benchmarks, not timed tests:
//   BM_Table4Sweep     seed 000 Table 4's prediction sweep: its two models x seven sizes (68 -> 4352 cores of
//                      core-level KNL nodes on the dragonfly, 4 ranks per chip), 3 steady-state iterations each,
//                      the levels chosen by scale. Goal: <= 10 s.
//   BM_MillionCores    one weak-scaling point of 1,000,008 cores (14,706 KNL nodes of knl-aries-1m) at the analytic
//                      level, with Table 4's first case; ranks_per_node 4 (seed 000 sec. 6.2) or 0 (one rank per
//                      core: 1,000,008 ranks). Goal: <= 60 s and <= 8 GB (max_rss_GB: the process's peak so far).
//
//   ninja -C build scaling_bench && build/simulate/bench/scaling_bench

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "algorithms/studies.hpp"
#include "platforms/catalog.hpp"
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

BENCHMARK(BM_Table4Sweep)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_MillionCores)
    ->ArgName("ranks_per_node")
    ->Arg(4)
    ->Arg(0)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
