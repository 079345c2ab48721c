// Google Benchmark of the shared-memory methods (algorithms/shared_memory/), generated from their catalog:
//   pass/<method>/<preset>/threads:<T>   one pass over the data set (the shuffle included), T OpenMP threads
// Counters are rates (kIsRate): nnz_per_s_per_core, the non-zeros processed per second per thread (issue 7's
// HogBatch goal: >= 40 M/s per core on rcv1-test-like; seed 003's Haswell reaches about 32 M/s per core), and
// nnz_per_s for all threads together; multi-model also model_nnz_per_s_per_core (non-zeros x models).
//
//   build/algorithms/shared_memory/bench/shared_memory_bench [--preset=rcv1-test-like] [--size=reduced|full]
//       [--threads=N] [--batch=S] [--row-order] [--benchmark_filter=hogbatch] ...
// --threads=N (default: all processors) is the largest team; T runs 1, 2, 4, ... up to N, and N. --batch=S sets
// Mini-Batch's S (HogBatch's HS is S / T), default 1024 as seed 003's Table I example. --row-order visits rows in
// order instead of a fresh shuffle per pass (the slides' loops).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/shared_memory/method.hpp"
#include "core/data/sparse_presets.hpp"
#include "core/error.hpp"
#include "core/linear/logistic.hpp"

namespace {

namespace sm = dsgd::algorithms::shared_memory;

// Models trained at once by multi-model-hogwild here (seed 003 Fig 4 goes up to 32 and beyond).
constexpr int kBenchModels = 8;

void register_method(const sm::MethodEntry& entry, const dsgd::linear::Problem& problem, int threads, int batch,
                     bool shuffle) {
  const std::string name = "pass/" + entry.name + "/" + problem.data->name + "/threads:" + std::to_string(threads);
  benchmark::RegisterBenchmark(
      name.c_str(),
      [&entry, problem, threads, batch, shuffle](benchmark::State& state) {
        sm::MethodOptions options;
        options.threads = threads;
        options.batch = batch;
        options.shuffle = shuffle;
        if (entry.multi_model) options.models = kBenchModels;
        const std::unique_ptr<sm::Method> method = entry.make(options);
        method->prepare(problem);
        sm::ModelVector model = sm::make_model(*method, problem.data->features);
        int pass = 0;
        for (auto _ : state) {
          ++pass;
          method->pass(model, 1.0F / std::sqrt(static_cast<float>(pass)), pass, nullptr);
        }
        const auto nnz = static_cast<double>(problem.data->nnz());
        const int used = method->threads();
        state.counters["nnz_per_s_per_core"] =
            benchmark::Counter(nnz / used, benchmark::Counter::kIsIterationInvariantRate);
        state.counters["nnz_per_s"] = benchmark::Counter(nnz, benchmark::Counter::kIsIterationInvariantRate);
        if (method->layout().models > 1) {
          state.counters["model_nnz_per_s_per_core"] =
              benchmark::Counter(nnz * method->layout().models / used, benchmark::Counter::kIsIterationInvariantRate);
        }
        state.SetLabel(std::to_string(used) + " threads, S " + std::to_string(options.batch) + ", models " +
                       std::to_string(method->layout().models));
      })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  // --preset, --size, --threads and --batch are ours; everything else goes to Google Benchmark.
  std::string preset = "rcv1-test-like";
  std::string size = "reduced";
  int threads = 0;
  int batch = 1024;
  bool shuffle = true;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--preset=", 9) == 0) {
      preset = argv[i] + 9;
    } else if (std::strncmp(argv[i], "--size=", 7) == 0) {
      size = argv[i] + 7;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else if (std::strcmp(argv[i], "--row-order") == 0) {
      shuffle = false;
    } else if (std::strncmp(argv[i], "--batch=", 8) == 0) {
      batch = std::atoi(argv[i] + 8);
    } else {
      args.push_back(argv[i]);
    }
  }
  if (threads <= 0) threads = omp_get_num_procs();
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;

  try {
    // Generated once, outside every timed region (seed 003 ignores I/O time).
    const dsgd::data::SparseDataset data =
        dsgd::data::generate_preset(dsgd::data::find_sparse_preset(preset), dsgd::data::parse_preset_size(size), 1);
    const dsgd::linear::Problem problem = dsgd::linear::problem(data);
    benchmark::AddCustomContext("data", data.name + ": " + std::to_string(data.rows()) + " rows, " +
                                            std::to_string(data.features) + " features, " + std::to_string(data.nnz()) +
                                            " non-zeros");
    std::vector<int> teams;
    for (int t = 1; t < threads; t *= 2) teams.push_back(t);
    teams.push_back(threads);
    for (const sm::MethodEntry& entry : sm::method_catalog()) {
      for (const int t : teams) {
        if (!entry.parallel && t > 1) continue;
        register_method(entry, problem, t, batch, shuffle);
      }
    }
    benchmark::RunSpecifiedBenchmarks();
  } catch (const dsgd::Error& error) {
    std::fprintf(stderr, "shared_memory_bench: %s\n", error.what());
    return 2;
  }
  benchmark::Shutdown();
  return 0;
}
