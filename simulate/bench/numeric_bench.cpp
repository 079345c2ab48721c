// The cost of numeric simulation (simulate/numeric.hpp) over the gradient computations it cannot avoid: the same
// workers' forward/backward passes and SGD steps on the same batches of Fashion-MNIST, run bare in a loop, against
// a numeric simulation of sync-sgd doing them in SimGrid (fork, engine, platform, messages, one evaluation on 100
// test images). Goal: overhead (numeric / bare - 1) at most 20%.
//
//   ninja -C build numeric_bench && build/simulate/bench/numeric_bench

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "app/run_common.hpp"
#include "core/data/sampler.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/network.hpp"
#include "core/nn/sgd.hpp"
#include "platforms/catalog.hpp"
#include "simulate/numeric.hpp"

namespace {

using namespace dsgd;

constexpr std::int64_t kIterations = 10;

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

// Each worker: its network, sampler and optimiser, as algorithms/trainer.cpp builds them; kIterations steps each.
void BM_BareGradients(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  const auto& train = *data().train;
  const auto model = build_model("lenet");
  const int batch = cli().run.hyper.batch;
  for (auto _ : state) {
    nn::BackendOptions one_thread;
    one_thread.threads = 1;  // as a rank of the simulation (RunOptions::threads_per_rank)
    auto backend = nn::make_backend("cpu", one_thread);
    std::vector<std::unique_ptr<nn::Network>> networks;
    std::vector<std::unique_ptr<data::BatchSampler>> samplers;
    std::vector<std::unique_ptr<nn::Sgd>> optimisers;
    for (int w = 0; w < workers; ++w) {
      networks.push_back(std::make_unique<nn::Network>(model, *backend, batch));
      networks.back()->initialize(1);
      samplers.push_back(std::make_unique<data::BatchSampler>(train.size(), batch, 1 + w));
      optimisers.push_back(
          std::make_unique<nn::Sgd>(*backend, networks.back()->parameter_count(), nn::SgdOptions{0.01F, 0.9F, 5e-4F}));
    }
    std::vector<float> images(static_cast<std::size_t>(batch) * train.image_size());
    std::vector<float> labels(static_cast<std::size_t>(batch));
    for (std::int64_t i = 0; i < kIterations; ++i) {
      for (int w = 0; w < workers; ++w) {
        data::fill_batch(train, samplers[w]->next(), images, labels);
        benchmark::DoNotOptimize(networks[w]->train_step(images.data(), labels.data()));
        optimisers[w]->step(networks[w]->parameters(), networks[w]->gradients());
      }
    }
  }
  state.counters["gradients_per_s"] =
      benchmark::Counter(static_cast<double>(workers * kIterations), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_NumericSimulation(benchmark::State& state) {
  simulate::NumericOptions options;
  options.run = cli().run;
  options.run.workers = static_cast<int>(state.range(0));
  const auto platform = platforms::load_platform("cori-knl");
  for (auto _ : state) {
    benchmark::DoNotOptimize(simulate::simulate_numeric(platform, options, data()).result.parameters_hash);
  }
  state.counters["gradients_per_s"] = benchmark::Counter(static_cast<double>(options.run.workers * kIterations),
                                                         benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_BareGradients)->Arg(4)->Arg(16)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_NumericSimulation)->Arg(4)->Arg(16)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
