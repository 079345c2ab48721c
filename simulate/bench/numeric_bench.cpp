// The cost of numeric simulation (simulate/numeric.hpp) over the gradient computations it cannot avoid, and the
// time of docs/time-to-accuracy.md's 64 LeNet workers to 85%.
//
// Overhead/W: each round computes W workers' forward/backward passes and SGD steps on their batches of
// Fashion-MNIST and rank 0's evaluation on 100 test images bare -- a plain loop, the workers split over the same
// threads the simulation computes on -- and then a numeric simulation of sync-sgd doing the same numeric work (and
// its fork, engine, platform and messages); rounds alternate the two, so both see the same machine. Counters:
// wall and CPU seconds of each, summed over the rounds, and overhead = simulated / bare - 1 of each. CPU time
// counts every thread of this process and the forked simulation (getrusage of RUSAGE_SELF and RUSAGE_CHILDREN);
// bare_faults and simulated_faults count page faults the same way, per round. sim_setup_wall_s, sim_run_wall_s and
// sim_outside_wall_s split the simulated wall time: the child's engine and platform, its engine run, the rest.
// Goal: both overheads at most 20%.
//
// LeNet64To85: `dsgd run --algo sync-easgd3 --lr 0.05 --workers 64 --threads 1 --executor simgrid --platform
// cori-knl --iterations 400 --eval-every 10 --test-images 2000 --target-accuracy 0.85` on every processor, then on
// one simulation thread; counters: both wall times, and same_weights = 1 where the weights hashes are equal. One
// OpenMP thread per kernel: the pool's threads then use the cores without oversubscribing them.
// Minutes long, so only run when asked for: --benchmark_filter=LeNet64.
//
//   ninja -C build numeric_bench && build/simulate/bench/numeric_bench [--benchmark_filter=LeNet64]
//   (--simulation-threads=N: N threads for both the bare loop and the simulation; default one per processor)

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/run_common.hpp"
#include "core/data/sampler.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/evaluation.hpp"
#include "core/nn/network.hpp"
#include "core/nn/sgd.hpp"
#include "platforms/catalog.hpp"
#include "simulate/bench/cpu_time.hpp"
#include "simulate/numeric.hpp"
#include "simulate/simgrid/kernel_pool.hpp"

namespace {

using namespace dsgd;

constexpr std::int64_t kIterations = 10;
constexpr int kRounds = 3;
int g_threads = 0;  // --simulation-threads (0: one per processor)

const app::RunCli& cli() {
  static const app::RunCli value = [] {
    app::RunCli cli;
    cli.test_images = 100;
    cli.run.algorithm = "sync-sgd";
    cli.run.budget.target_accuracy = 0;
    cli.run.budget.iterations = kIterations;
    cli.run.budget.eval_every = kIterations;
    return cli;
  }();
  return value;
}

const algorithms::RunData& data() {
  static const algorithms::RunData value = app::load_run_data(cli());
  return value;
}

using bench::cpu_seconds;

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Each worker as algorithms/trainer.cpp builds it -- its back end, network, sampler and optimiser -- and kIterations
// steps each; worker w on thread w % threads.
void bare_gradients(int workers, int threads) {
  const auto& train = *data().train;
  const auto model = build_model("lenet");
  const int batch = cli().run.hyper.batch;
  const auto worker_steps = [&](int first) {
    nn::BackendOptions one_thread;
    one_thread.threads = 1;  // as a rank of the simulation (RunOptions::threads_per_rank)
    struct Worker {
      std::unique_ptr<nn::Backend> backend;
      std::unique_ptr<nn::Network> network;
      std::unique_ptr<data::BatchSampler> sampler;
      std::unique_ptr<nn::Sgd> sgd;
    };
    std::vector<Worker> mine;
    for (int w = first; w < workers; w += threads) {
      Worker worker;
      worker.backend = nn::make_backend("cpu", one_thread);
      worker.network = std::make_unique<nn::Network>(model, *worker.backend, batch);
      worker.network->initialize(1);
      worker.sampler = std::make_unique<data::BatchSampler>(train.size(), batch, 1 + w);
      worker.sgd = std::make_unique<nn::Sgd>(*worker.backend, worker.network->parameter_count(),
                                             nn::SgdOptions{0.01F, 0.9F, 5e-4F});
      mine.push_back(std::move(worker));
    }
    std::vector<float> images(static_cast<std::size_t>(batch) * train.image_size());
    std::vector<float> labels(static_cast<std::size_t>(batch));
    for (std::int64_t i = 0; i < kIterations; ++i) {
      for (auto& worker : mine) {
        data::fill_batch(train, worker.sampler->next(), images, labels);
        benchmark::DoNotOptimize(worker.network->train_step(images.data(), labels.data()));
        worker.sgd->step(worker.network->parameters(), worker.network->gradients());
      }
    }
    // Rank 0's evaluation at the end, as the simulation's Recorder does it: an evaluator of its own on worker 0's
    // back end, the test set in one batch (100 images, one evaluator).
    if (first == 0) {
      const auto& test = *data().test;
      nn::Network evaluator(model, *mine[0].backend, nn::evaluation_batch(test.size()));
      mine[0].backend->copy(evaluator.parameters(), mine[0].network->parameters(), evaluator.parameter_count());
      benchmark::DoNotOptimize(nn::evaluate(evaluator, test).accuracy);
    }
  };
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back(worker_steps, t);
  worker_steps(0);
  for (auto& thread : others) thread.join();
}

void BM_Overhead(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  const int threads = simulate::kernel_threads_for(g_threads);
  simulate::NumericOptions options;
  options.run = cli().run;
  options.run.workers = workers;
  options.kernel_threads = threads;
  const auto platform = platforms::load_platform("cori-knl");
  data();  // loaded before any clock starts
  double bare_wall = 0, bare_cpu = 0, simulated_wall = 0, simulated_cpu = 0, bare_faults = 0, simulated_faults = 0;
  double engine_setup = 0, engine_run = 0;
  for (auto _ : state) {
    double wall = wall_seconds(), cpu = cpu_seconds(), faults = bench::page_faults();
    bare_gradients(workers, threads);
    bare_wall += wall_seconds() - wall;
    bare_cpu += cpu_seconds() - cpu;
    bare_faults += bench::page_faults() - faults;
    wall = wall_seconds();
    cpu = cpu_seconds();
    faults = bench::page_faults();
    const simulate::NumericRun run = simulate::simulate_numeric(platform, options, data());
    benchmark::DoNotOptimize(run.result.parameters_hash);
    simulated_wall += wall_seconds() - wall;
    simulated_cpu += cpu_seconds() - cpu;
    simulated_faults += bench::page_faults() - faults;
    state.SetIterationTime(wall_seconds() - wall);
    engine_setup += run.setup_wall_s;
    engine_run += run.run_wall_s;
  }
  state.counters["threads"] = threads;
  state.counters["bare_wall_s"] = bare_wall;
  state.counters["simulated_wall_s"] = simulated_wall;
  state.counters["bare_cpu_s"] = bare_cpu;
  state.counters["simulated_cpu_s"] = simulated_cpu;
  state.counters["wall_overhead"] = simulated_wall / bare_wall - 1;
  state.counters["cpu_overhead"] = simulated_cpu / bare_cpu - 1;
  state.counters["bare_faults"] = bare_faults / kRounds;
  state.counters["simulated_faults"] = simulated_faults / kRounds;
  // Where the simulated side's wall time goes: the child's engine and platform, its engine run, and the rest
  // (the fork, the child's exit, the report).
  state.counters["sim_setup_wall_s"] = engine_setup;
  state.counters["sim_run_wall_s"] = engine_run;
  state.counters["sim_outside_wall_s"] = simulated_wall - engine_setup - engine_run;
  state.SetLabel("sync-sgd, LeNet, cori-knl, " + std::to_string(kIterations) + " iterations; " +
                 std::to_string(threads) + " threads");
}

void BM_LeNet64To85(benchmark::State& state) {
  app::RunCli run_cli;
  run_cli.test_images = 2000;
  run_cli.run.algorithm = "sync-easgd3";
  run_cli.run.hyper.learning_rate = 0.05F;
  run_cli.run.workers = 64;
  run_cli.run.threads_per_rank = 1;
  run_cli.run.budget.iterations = 400;
  run_cli.run.budget.eval_every = 10;
  run_cli.run.budget.target_accuracy = 0.85;
  const auto run_data = app::load_run_data(run_cli);
  const auto platform = platforms::load_platform("cori-knl");
  simulate::NumericOptions options;
  options.run = run_cli.run;
  options.wall_timeout_s = 1800;
  for (auto _ : state) {
    options.kernel_threads = g_threads;
    double wall = wall_seconds();
    const auto pooled = simulate::simulate_numeric(platform, options, run_data);
    const double pooled_wall = wall_seconds() - wall;
    options.kernel_threads = 1;
    wall = wall_seconds();
    const auto one = simulate::simulate_numeric(platform, options, run_data);
    const double one_wall = wall_seconds() - wall;
    state.SetIterationTime(pooled_wall);
    state.counters["wall_s"] = pooled_wall;
    state.counters["one_thread_wall_s"] = one_wall;
    state.counters["iterations"] = static_cast<double>(pooled.result.iterations);
    state.counters["same_weights"] = pooled.result.parameters_hash == one.result.parameters_hash ? 1 : 0;
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(pooled.result.parameters_hash));
    state.SetLabel(std::string("weights ") + hash + ", " + pooled.result.stop_reason + "; " +
                   std::to_string(simulate::kernel_threads_for(g_threads)) + " threads");
  }
}

BENCHMARK(BM_Overhead)->Arg(4)->Arg(16)->Unit(benchmark::kSecond)->UseManualTime()->Iterations(kRounds);
BENCHMARK(BM_LeNet64To85)->Unit(benchmark::kSecond)->UseManualTime()->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  // Only the overhead unless a filter asks for more (the 64-worker run takes minutes); a later filter wins.
  std::vector<char*> arguments = {argv[0], const_cast<char*>("--benchmark_filter=Overhead")};
  for (int i = 1; i < argc; ++i) {
    const char* prefix = "--simulation-threads=";
    if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) {
      g_threads = std::stoi(argv[i] + std::strlen(prefix));
    } else {
      arguments.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(arguments.size());
  benchmark::Initialize(&count, arguments.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
