// Wall time of the scheme study's 512-GPU points (`dsgd simulate --study schemes`, docs/communication-schemes.md),
// every scheme and both models, with the flow level's fold of flows that meet only at a FATPIPE link
// (SimulationOptions::fold_fatpipe_flows) and without it -- the full simulation -- alternated in one run. Goal
// (issue 46): <= 10 s of wall time per point, the answer (simulated seconds per iteration) within 0.5% of the full
// simulation's. The compute is the platform's own efficiency, not the study's calibration: the comparison is between
// the two simulations of one point.
//
// Counters: fold_wall_s and full_wall_s (each simulation's wall time), speedup (full over fold), s_per_iteration
// (with the fold) and rel_diff (its relative difference from the full simulation's). Label: the level that ran.
//
//   ninja -C build scheme_bench && build/simulate/bench/scheme_bench [--benchmark_filter=vgg16]

#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "algorithms/studies.hpp"
#include "platforms/catalog.hpp"
#include "simulate/scheme_study.hpp"
#include "simulate/weak_scaling.hpp"

namespace {

using namespace dsgd;

constexpr int kWorkers = 512;

void BM_SchemePoint(benchmark::State& state, const std::string& platform_name, const algorithms::SchemeModel& model,
                    const algorithms::Scheme& scheme, std::int64_t iterations) {
  const auto platform = platforms::catalog_platform(platform_name);
  simulate::ScalingOptions options = simulate::scheme_scaling_options(platform, model, scheme, kWorkers);
  options.iterations = iterations;
  simulate::ScalingPoint fold;
  simulate::ScalingPoint full;
  for (auto _ : state) {
    options.fold_fatpipe_flows = true;
    fold = simulate::simulate_weak_scaling(platform, options).front();
    options.fold_fatpipe_flows = false;
    full = simulate::simulate_weak_scaling(platform, options).front();
    state.SetIterationTime(fold.wall_s);
  }
  state.counters["fold_wall_s"] = fold.wall_s;
  state.counters["full_wall_s"] = full.wall_s;
  state.counters["speedup"] = full.wall_s / fold.wall_s;
  state.counters["s_per_iteration"] = fold.seconds_per_iteration;
  state.counters["rel_diff"] = std::abs(fold.seconds_per_iteration / full.seconds_per_iteration - 1);
  state.SetLabel(std::string(simulate::to_string(fold.fidelity)) + " level");
}

}  // namespace

int main(int argc, char** argv) {
  const auto& study = algorithms::find_scheme_study("schemes");
  // p100-roce-25g first: the cluster whose points took longest (the measurements).
  for (const auto& platform : study.platforms) {
    for (const auto& model : study.models) {
      for (const auto& scheme : study.schemes) {
        benchmark::RegisterBenchmark((platform + "/" + model.model + "/" + scheme.label).c_str(), BM_SchemePoint,
                                     platform, model, scheme, simulate::SchemeStudyOptions{}.iterations)
            ->Unit(benchmark::kSecond)
            ->UseManualTime()
            ->Iterations(1);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
