// Wall time of simulating one binomial reduce + broadcast of 1 MiB (size only, message fidelity) on a flat
// alpha-beta star, at 64, 512 and 4352 ranks (seed 000's 4352 KNL cores). The goal: <= 50 ms at 4352.
//
//   ninja -C build simulate_bench && build/simulate/bench/simulate_bench
//
// Each iteration is one run_simulation(): fork, SimGrid engine, platform, one actor per rank, run, report. The
// counters split it: setup_ms (engine + platform + actors, in the child), run_ms (Engine::run: the collective
// itself) and the rest (fork, pipe, exit). BM_EmptyWorld is the same without the collective (pure set-up), and
// BM_ClosedForm the analytic level's price for the same prediction.

#include <benchmark/benchmark.h>

#include "core/collectives.hpp"
#include "simulate/collective_costs.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace {

using namespace dsgd;

constexpr std::size_t kCount = 262144;  // 1 MiB of floats
constexpr double kLatency = 1e-6;
constexpr double kBandwidth = 1e9;
constexpr double kFlops = 1e12;

void run_and_count(benchmark::State& state, const WorkerFunction& worker) {
  const int ranks = static_cast<int>(state.range(0));
  const auto platform = simulate::flat_platform(ranks, kLatency, kBandwidth, kFlops);
  WorldOptions world;
  world.size = ranks;
  world.payload = false;
  double setup_s = 0;
  double run_s = 0;
  double simulated_s = 0;
  for (auto _ : state) {
    const auto result = simulate::run_simulation(platform, world, worker);
    setup_s += result.setup_wall_s;
    run_s += result.run_wall_s;
    simulated_s = result.simulated_s;
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["setup_ms"] = 1e3 * setup_s / iterations;
  state.counters["run_ms"] = 1e3 * run_s / iterations;
  state.counters["simulated_s"] = simulated_s;
  state.SetLabel("simgrid, message fidelity, size only");
}

void BM_ReduceBroadcast(benchmark::State& state) {
  run_and_count(state, [](Comm& comm) {
    const Floats buffer{nullptr, kCount};
    reduce(comm, buffer, 0);
    broadcast(comm, buffer, 0);
  });
}

void BM_EmptyWorld(benchmark::State& state) {
  run_and_count(state, [](Comm&) {});
}

void BM_ClosedForm(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const auto model = simulate::alpha_beta_gamma(simulate::flat_platform(ranks, kLatency, kBandwidth, kFlops));
  double predicted_s = 0;
  for (auto _ : state) {
    predicted_s = simulate::reduce_time(model, ranks, kCount) + simulate::broadcast_time(model, ranks, kCount);
    benchmark::DoNotOptimize(predicted_s);
  }
  state.counters["simulated_s"] = predicted_s;
  state.SetLabel("analytic");
}

BENCHMARK(BM_ReduceBroadcast)->Arg(64)->Arg(512)->Arg(4352)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EmptyWorld)->Arg(64)->Arg(512)->Arg(4352)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ClosedForm)->Arg(64)->Arg(512)->Arg(4352)->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
