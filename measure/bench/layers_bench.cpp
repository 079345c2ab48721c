// Google Benchmark of the neural-network kernels (core/nn/) on every back end found here:
//   layer/<backend>/<model>/<layer>/{forward,backward}   each layer of lenet and cifar10_alexnet at batch 64, and a
//                                                        few zoo layers at a reduced input size ("<model>@1/4")
//   train_step/<backend>/lenet/64                        forward, loss and backward of the whole network
//   train_step_beside_busy_process/<backend>/lenet/64    the same while another process spins on a core
//   iteration/<backend>/lenet/64                         the same plus the momentum-SGD update
//   copy/<backend>/<model>/{packed,per_layer}            the parameter buffer to the host: one copy, or one per layer
//   sgemm/<n>                                            plain OpenBLAS SGEMM, n x n x n: the peak to compare against
// FLOP rates are counters (FLOP/s, kIsIterationInvariantRate): forward counts the zoo's forward_flops; backward of
// convolution and inner product counts twice that (data and weights gradients), other layers once. Times are
// manual (each iteration ends with Backend::synchronize), so GPU runs measure the kernels, not their queueing.
//
//   build-nn/measure/bench/layers_bench --threads=2 --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true --benchmark_out=layers.json --benchmark_out_format=json
// --threads=N (default 0: all processors) sets the CPU back end's and SGEMM's OpenMP threads.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/network.hpp"
#include "core/nn/random.hpp"
#include "core/nn/sgd.hpp"
#include "core/process_environment.hpp"
#include "core/stopwatch.hpp"

namespace {

using dsgd::LayerKind;
using dsgd::LayerSpec;
using dsgd::ModelSpec;
using dsgd::seconds_since;
using dsgd::Shape;
using dsgd::nn::Backend;

constexpr int kBatch = 64;
using Clock = std::chrono::steady_clock;

// Back-end memory filled with seeded values in [-1, 1).
class Buffer {
 public:
  Buffer(Backend& backend, std::size_t count, std::uint64_t seed) : backend_(backend), data_(backend.allocate(count)) {
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) {
      host[i] = 2.0f * dsgd::nn::unit_float(dsgd::nn::random_bits(seed, i)) - 1.0f;
    }
    backend.copy_to_device(data_, host.data(), count);
  }
  ~Buffer() { backend_.release(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* get() const { return data_; }

 private:
  Backend& backend_;
  float* data_;
};

// The first layer of a network computes no input gradient (Network passes grad_in = null), so its backward is the
// weights gradient alone.
double backward_flops(const LayerSpec& spec, bool first) {
  const bool gemm_like = spec.kind == LayerKind::kConvolution || spec.kind == LayerKind::kInnerProduct;
  return (gemm_like && !first ? 2.0 : 1.0) * spec.forward_flops;
}

void register_layer(Backend& backend, const std::string& model, const LayerSpec& spec, bool first = false) {
  const std::string prefix = "layer/" + std::string(backend.name()) + "/" + model + "/" + spec.name + "/";
  for (const bool backward : {false, true}) {
    const double flops = kBatch * (backward ? backward_flops(spec, first) : spec.forward_flops);
    benchmark::RegisterBenchmark(
        (prefix + (backward ? "backward" : "forward")).c_str(),
        [&backend, spec, backward, first, flops](benchmark::State& state) {
          std::unique_ptr<dsgd::nn::Layer> layer;
          try {
            layer = backend.create_layer(spec, kBatch);
          } catch (const dsgd::UnavailableError& e) {
            state.SkipWithError(e.what());
            return;
          }
          const auto in_count = static_cast<std::size_t>(kBatch * spec.input.elements());
          const auto out_count = static_cast<std::size_t>(kBatch * spec.output.elements());
          const std::size_t param_count = std::max<std::size_t>(layer->parameter_count(), 1);
          Buffer in(backend, in_count, 1), out(backend, out_count, 2), params(backend, param_count, 3);
          Buffer grad_out(backend, out_count, 4), grad_in(backend, in_count, 5), grad_params(backend, param_count, 6);
          layer->forward(in.get(), out.get(), params.get(), true);
          backend.synchronize();
          for (auto _ : state) {
            const auto start = Clock::now();
            if (backward) {
              layer->backward(in.get(), out.get(), grad_out.get(), first ? nullptr : grad_in.get(), params.get(),
                              grad_params.get());
            } else {
              layer->forward(in.get(), out.get(), params.get(), true);
            }
            backend.synchronize();
            state.SetIterationTime(seconds_since(start));
          }
          state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
          state.counters["flops"] = flops;
          state.SetLabel(std::string(backend.name()) + " " + std::string(dsgd::to_string(spec.kind)));
        })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

// A zoo layer with its input's height and width divided by `factor` (at least the kernel), its output and FLOPs
// recomputed: the layer's arithmetic shape at a size that fits a 2-core benchmark.
LayerSpec reduced(const LayerSpec& layer, std::int64_t factor) {
  LayerSpec spec = layer;
  spec.input.height = std::max(layer.input.height / factor, std::max<std::int64_t>(layer.kernel_h, 1));
  spec.input.width = std::max(layer.input.width / factor, std::max<std::int64_t>(layer.kernel_w, 1));
  if (spec.kind == LayerKind::kConvolution) {
    spec.output.height = (spec.input.height + 2 * spec.pad_h - spec.kernel_h) / spec.stride + 1;
    spec.output.width = (spec.input.width + 2 * spec.pad_w - spec.kernel_w) / spec.stride + 1;
    const std::int64_t in_per_group = spec.input.channels / spec.groups;
    const auto macs_per_output = static_cast<double>(in_per_group * spec.kernel_h * spec.kernel_w);
    spec.forward_flops = 2.0 * macs_per_output * static_cast<double>(spec.output.elements());
  } else {
    DSGD_ENFORCE(layer.input == layer.output, "reduced() handles convolutions and element-wise layers");
    spec.output = spec.input;
    spec.forward_flops = layer.forward_flops * static_cast<double>(spec.output.elements()) /
                         static_cast<double>(layer.output.elements());
  }
  return spec;
}

const LayerSpec& layer_named(const ModelSpec& model, const std::string& name) {
  for (const LayerSpec& layer : model.layers) {
    if (layer.name == name) return layer;
  }
  throw dsgd::InputError("no layer '" + name + "' in model '" + model.name + "'");
}

void register_layers(Backend& backend) {
  for (const char* name : {"lenet", "cifar10_alexnet"}) {
    const ModelSpec model = dsgd::build_model(name);
    for (const LayerSpec& layer : model.layers) {
      if (layer.kind != LayerKind::kSoftmax) register_layer(backend, name, layer, &layer == &model.layers.front());
    }
  }
  // Big networks' layers at a quarter of their height and width.
  const std::vector<std::pair<std::string, std::vector<std::string>>> zoo = {
      {"alexnet", {"conv2", "norm1"}},
      {"vgg16", {"conv2_2", "conv4_2"}},
      {"resnet50", {"layer1.0.conv2", "layer1.0.bn2"}},
  };
  for (const auto& [name, layers] : zoo) {
    const ModelSpec model = dsgd::build_model(name);
    for (const std::string& layer : layers)
      register_layer(backend, name + "@1/4", reduced(layer_named(model, layer), 4));
  }
}

// Another process spinning on a core for as long as it lives: the competing load of a shared machine.
class BusyNeighbour {
 public:
  BusyNeighbour() : pid_(::fork()) {
    if (pid_ == 0) {
      volatile std::uint64_t spin = 0;
      for (;;) spin = spin + 1;
    }
    if (pid_ < 0) throw dsgd::InternalError("layers_bench: fork of the busy neighbour failed");
  }
  ~BusyNeighbour() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  BusyNeighbour(const BusyNeighbour&) = delete;
  BusyNeighbour& operator=(const BusyNeighbour&) = delete;

 private:
  pid_t pid_;
};

// train_step and iteration on LeNet, and train_step beside a busy neighbour process: how much a step loses when
// another process takes a core (docs/design.md "Threads on a busy machine"; a fair share on 2 cores and 2 threads
// is 1.5x the time alone).
void register_training(Backend& backend) {
  for (const auto& [kind, update, busy] : {std::tuple{"train_step", false, false}, std::tuple{"iteration", true, false},
                                           std::tuple{"train_step_beside_busy_process", false, true}}) {
    const std::string name = std::string(kind) + "/" + std::string(backend.name()) + "/lenet/" + std::to_string(kBatch);
    benchmark::RegisterBenchmark(
        name.c_str(),
        [&backend, update, busy](benchmark::State& state) {
          const ModelSpec model = dsgd::build_model("lenet");
          dsgd::nn::Network network(model, backend, kBatch);
          network.initialize(1);
          Buffer images(backend, static_cast<std::size_t>(kBatch * model.input.elements()), 7);
          std::vector<float> labels(kBatch);
          for (int i = 0; i < kBatch; ++i) labels[i] = static_cast<float>(i % model.classes);
          float* device_labels = backend.allocate(labels.size());
          backend.copy_to_device(device_labels, labels.data(), labels.size());
          dsgd::nn::Sgd sgd(backend, network.parameter_count(),
                            {.learning_rate = 0.01f, .momentum = 0.9f, .weight_decay = 5e-4f});
          std::optional<BusyNeighbour> neighbour;
          if (busy) neighbour.emplace();
          for (auto _ : state) {
            const auto start = Clock::now();
            network.train_step(images.get(), device_labels);
            if (update) sgd.step(network.parameters(), network.gradients());
            backend.synchronize();
            state.SetIterationTime(seconds_since(start));
          }
          neighbour.reset();
          backend.release(device_labels);
          state.counters["images/s"] = benchmark::Counter(kBatch, benchmark::Counter::kIsIterationInvariantRate);
          // Forward, backward data and backward weights: three times the forward FLOPs of the whole network.
          state.counters["FLOP/s"] =
              benchmark::Counter(3.0 * kBatch * model.forward_flops(), benchmark::Counter::kIsIterationInvariantRate);
          const char* spin = std::getenv("GOMP_SPINCOUNT");
          const char* policy = std::getenv("OMP_WAIT_POLICY");
          state.SetLabel(std::string(backend.name()) + (busy ? ", beside a busy process" : "") + ", OMP_WAIT_POLICY=" +
                         (policy ? policy : "unset") + " GOMP_SPINCOUNT=" + (spin ? spin : "unset"));
        })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

void register_copies(Backend& backend) {
  for (const char* model_name : {"lenet", "cifar10_alexnet"}) {
    for (const bool per_layer : {false, true}) {
      const std::string name =
          "copy/" + std::string(backend.name()) + "/" + model_name + (per_layer ? "/per_layer" : "/packed");
      benchmark::RegisterBenchmark(
          name.c_str(),
          [&backend, model_name, per_layer](benchmark::State& state) {
            dsgd::nn::Network network(dsgd::build_model(model_name), backend, 1);
            const std::size_t count = network.parameter_count();
            std::vector<float> host(count);
            for (auto _ : state) {
              const auto start = Clock::now();
              if (per_layer) {
                for (const dsgd::nn::ParameterSlice& slice : network.layout()) {
                  if (slice.count > 0)
                    backend.copy_to_host(host.data() + slice.offset, network.parameters() + slice.offset, slice.count);
                }
              } else {
                backend.copy_to_host(host.data(), network.parameters(), count);
              }
              backend.synchronize();
              state.SetIterationTime(seconds_since(start));
            }
            state.counters["bytes"] = static_cast<double>(count * sizeof(float));
            state.counters["Bps"] = benchmark::Counter(static_cast<double>(count * sizeof(float)),
                                                       benchmark::Counter::kIsIterationInvariantRate);
            state.SetLabel(std::string(backend.name()) + (per_layer ? " one copy per layer" : " one copy"));
          })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

void register_sgemm(int threads) {
  for (const int n : {1024, 2048}) {
    benchmark::RegisterBenchmark(
        ("sgemm/" + std::to_string(n)).c_str(),
        [n, threads](benchmark::State& state) {
          const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
          std::vector<float> a(count), b(count), c(count, 0.0f);
          for (std::size_t i = 0; i < count; ++i) {
            a[i] = dsgd::nn::unit_float(dsgd::nn::random_bits(1, i));
            b[i] = dsgd::nn::unit_float(dsgd::nn::random_bits(2, i));
          }
          // The OpenMP build of OpenBLAS takes its thread count from OpenMP.
          omp_set_num_threads(threads);
          for (auto _ : state) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                        c.data(), n);
            benchmark::DoNotOptimize(c.data());
          }
          state.counters["FLOP/s"] =
              benchmark::Counter(2.0 * n * n * static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
          state.SetLabel(std::string(openblas_get_config()) + ", " + std::to_string(threads) + " threads");
        })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  dsgd::set_process_environment(argv);
  // --threads=N is ours; everything else goes to Google Benchmark.
  int threads = 0;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else {
      args.push_back(argv[i]);
    }
  }
  if (threads <= 0) threads = omp_get_num_procs();
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;

  std::vector<std::unique_ptr<Backend>> backends;
  for (const std::string& name : dsgd::nn::available_backends()) {
    dsgd::nn::BackendOptions options;
    options.threads = threads;
    backends.push_back(dsgd::nn::make_backend(name, options));
    benchmark::AddCustomContext("backend." + name, backends.back()->description());
  }
  for (const auto& backend : backends) {
    register_training(*backend);
    register_layers(*backend);
    register_copies(*backend);
  }
  register_sgemm(threads);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
