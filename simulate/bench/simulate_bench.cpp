// Wall time of simulating one binomial reduce + broadcast of 1 MiB (size only) on a flat alpha-beta star, at 64,
// 512 and 4352 ranks (seed 000's 4352 KNL cores), at message and at flow fidelity. The goal: <= 50 ms at
// 4352 ranks.
//
//   ninja -C build simulate_bench && build/simulate/bench/simulate_bench
//
// BM_ReduceBroadcast runs kRepeats reduce + broadcast pairs in one simulation and reports, besides the whole
// run_simulation() call (fork, engine, platform, actors, run, report):
//   per_collective_ms  wall time per reduce + broadcast in steady state: rank 0's wall clock from entering the
//                      second pair to leaving the last, divided by kRepeats - 1 (actors run one at a time in one
//                      OS thread, so this covers every rank's share of the work in between)
//   first_ms           the same for the first pair, which also derives and caches the flow schedule
//   setup_ms, run_ms   engine + platform + actors, and Engine::run() in all
// BM_EmptyWorld is the same simulation without collectives (pure set-up and actor start-up), BM_ClosedForm the
// analytic level's price for the same prediction.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

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
constexpr int kRepeats = 6;

double wall_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Run {
  simulate::SimulationResult result;
  std::vector<double> stamps_s;  // rank 0's wall clock before each pair and after the last
};

Run simulate_pairs(int ranks, simulate::Fidelity fidelity, int pairs) {
  const auto platform = simulate::flat_platform(ranks, kLatency, kBandwidth, kFlops);
  WorldOptions world;
  world.size = ranks;
  world.payload = false;
  simulate::SimulationOptions options;
  options.fidelity = fidelity;
  // The stamps live in the forked simulation: collect() sends them back as raw doubles.
  auto stamps = std::make_shared<std::vector<double>>();
  options.collect = [stamps] {
    return std::string(reinterpret_cast<const char*>(stamps->data()), stamps->size() * sizeof(double));
  };
  Run run;
  run.result = simulate::simgrid::run(
      platform, world,
      [&](Comm& comm) {
        const Floats buffer{nullptr, kCount};
        for (int pair = 0; pair < pairs; ++pair) {
          if (comm.rank() == 0) stamps->push_back(wall_s());
          reduce(comm, buffer, 0);
          broadcast(comm, buffer, 0);
        }
        if (comm.rank() == 0) stamps->push_back(wall_s());
      },
      options);
  run.stamps_s.resize(run.result.collected.size() / sizeof(double));
  std::memcpy(run.stamps_s.data(), run.result.collected.data(), run.stamps_s.size() * sizeof(double));
  return run;
}

void report(benchmark::State& state, double setup_s, double run_s, const simulate::SimulationResult& last) {
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["setup_ms"] = 1e3 * setup_s / iterations;
  state.counters["run_ms"] = 1e3 * run_s / iterations;
  state.counters["simulated_s"] = last.time_s;
  state.SetLabel("simgrid, " + std::string(simulate::to_string(last.fidelity)) + " fidelity, size only");
}

void BM_ReduceBroadcast(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const auto fidelity = static_cast<simulate::Fidelity>(state.range(1));
  double setup_s = 0, run_s = 0, first_s = 0, steady_s = 0;
  Run run;
  for (auto _ : state) {
    run = simulate_pairs(ranks, fidelity, kRepeats);
    setup_s += run.result.setup_wall_s;
    run_s += run.result.run_wall_s;
    first_s += run.stamps_s.at(1) - run.stamps_s.at(0);
    steady_s += (run.stamps_s.at(kRepeats) - run.stamps_s.at(1)) / (kRepeats - 1);
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["per_collective_ms"] = 1e3 * steady_s / iterations;
  state.counters["first_ms"] = 1e3 * first_s / iterations;
  // simulated_s of one pair, as BM_ClosedForm's
  run.result.time_s /= kRepeats;
  report(state, setup_s, run_s, run.result);
}

void BM_EmptyWorld(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  double setup_s = 0, run_s = 0;
  Run run;
  for (auto _ : state) {
    run = simulate_pairs(ranks, simulate::Fidelity::kMessage, 0);
    setup_s += run.result.setup_wall_s;
    run_s += run.result.run_wall_s;
  }
  report(state, setup_s, run_s, run.result);
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

constexpr auto kMessage = static_cast<long>(simulate::Fidelity::kMessage);
constexpr auto kFlow = static_cast<long>(simulate::Fidelity::kFlow);
BENCHMARK(BM_ReduceBroadcast)
    ->ArgNames({"ranks", "fidelity"})
    ->ArgsProduct({{64, 512, 4352}, {kMessage, kFlow}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EmptyWorld)->ArgName("ranks")->Arg(64)->Arg(512)->Arg(4352)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ClosedForm)->ArgName("ranks")->Arg(64)->Arg(512)->Arg(4352)->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
