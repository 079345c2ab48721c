// Wall time of predicting transformer training under 3-D parallelism (simulate/transformer_training.hpp), a speed
// goal that belongs to a benchmark, not a timed test:
//   BM_LargestMegatronRow  Megatron-LM SC'21 Table 1's 1008B row: 3,072 GPUs, tp 8 x pp 64 x dp 6, 512
//                          micro-batches through 1F1B played out op by op. Goal: <= 60 s.
//   BM_MegatronStudy       the whole table: the efficiency fitted on the 1.7B row by bisection, ten rows predicted.
//
//   ninja -C build transformer_bench && build/simulate/bench/transformer_bench

#include <benchmark/benchmark.h>

#include "algorithms/studies.hpp"
#include "platforms/catalog.hpp"
#include "simulate/transformer_study.hpp"

namespace {

using namespace dsgd;

void BM_LargestMegatronRow(benchmark::State& state) {
  const auto& study = algorithms::transformer_study_catalog().front();
  const auto platform = platforms::catalog_platform(study.platform);
  const auto& row = study.rows.back();
  const auto model = build_transformer(row.model);
  double tflops = 0;
  for (auto _ : state) {
    tflops = simulate::predict_transformer(model, simulate::layout_of(row), platform).tflops_per_gpu;
  }
  state.counters["gpus"] = row.gpus;
  state.counters["tflops_per_gpu"] = tflops;
}

void BM_MegatronStudy(benchmark::State& state) {
  const auto& study = algorithms::transformer_study_catalog().front();
  const auto platform = platforms::catalog_platform(study.platform);
  double mean = 0;
  for (auto _ : state) mean = simulate::run_transformer_study(study, platform).mean_abs_difference_percent;
  state.counters["mean_abs_difference_percent"] = mean;
}

BENCHMARK(BM_LargestMegatronRow)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MegatronStudy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
