#include "measure/kernel_calibration.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <numbers>
#include <random>
#include <thread>
#include <utility>

#include "core/data/dataset.hpp"
#include "core/data/sampler.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/network.hpp"
#include "core/nn/sgd.hpp"
#include "core/stats.hpp"
#include "core/stopwatch.hpp"
#include "measure/calibration.hpp"

namespace dsgd::measure {

namespace {

using Clock = std::chrono::steady_clock;

// A timing with its samples, before the copies' samples are merged.
struct Measured : KernelTiming {
  std::vector<double> samples;
  bool in_iteration = false;  // one of the iteration's kernels (time_iteration), not timed alone
};

// What one copy of the benchmark shares with the others: the barrier that keeps them in step, and whose turn it is
// when they take turns.
struct Step {
  std::barrier<>* barrier = nullptr;  // null: a single copy
  int copy = 0;
  int turns = 0;  // 0: the copies compute at once; else their number, and each computes in its own turn

  // `body` once in step with the other copies: all at once after a barrier, or in this copy's turn.
  template <typename Body>
  void run(Body&& body) const {
    if (barrier == nullptr) {
      body();
      return;
    }
    if (turns == 0) {
      barrier->arrive_and_wait();
      body();
      return;
    }
    for (int turn = 0; turn < turns; ++turn) {
      barrier->arrive_and_wait();
      if (turn == copy) body();
    }
  }
};

// `repetitions` timings of `body` after `warmup` untimed calls, started with the other copies (merged over the
// copies afterwards); copies that take turns take one for each call.
template <typename Body>
std::vector<double> timed_samples(const KernelBenchOptions& options, const Step& step, Body&& body) {
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(options.repetitions));
  const auto timed = [&] {
    const auto start = Clock::now();
    body();
    samples.push_back(seconds_since(start));
  };
  if (step.turns > 0) {
    for (int i = 0; i < options.warmup; ++i) step.run(body);
    for (int i = 0; i < options.repetitions; ++i) step.run(timed);
    return samples;
  }
  if (step.barrier != nullptr) step.barrier->arrive_and_wait();
  for (int i = 0; i < options.warmup; ++i) body();
  for (int i = 0; i < options.repetitions; ++i) timed();
  return samples;
}

// Back-end buffers released on scope exit.
class Buffers {
 public:
  explicit Buffers(nn::Backend& backend) : backend_(backend) {}
  ~Buffers() {
    for (float* data : owned_) backend_.release(data);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  float* make(std::size_t count) {
    owned_.push_back(backend_.allocate(count));
    return owned_.back();
  }

 private:
  nn::Backend& backend_;
  std::vector<float*> owned_;
};

void fill_normal(std::span<float> values, std::mt19937_64& random) {
  std::normal_distribution<float> normal(0.0F, 1.0F);
  for (float& value : values) value = normal(random);
}

std::string threads_text(int threads) { return std::to_string(threads) + (threads == 1 ? " thread" : " threads"); }

// gemm: the model's inner-product layers, forward and backward, each on its own random input.
Measured time_inner_products(const ModelSpec& model, const KernelBenchOptions& options, nn::Backend& backend,
                             std::mt19937_64& random, const Step& step) {
  struct InnerProduct {
    std::unique_ptr<nn::Layer> layer;
    float *in, *out, *grad_out, *grad_in, *params, *grad_params;
  };
  Buffers buffers(backend);
  std::vector<InnerProduct> layers;
  double flops = 0;
  std::string names;
  const auto batch = static_cast<std::size_t>(options.batch);
  for (const auto& spec : model.layers) {
    if (spec.kind != LayerKind::kInnerProduct) continue;
    InnerProduct item;
    item.layer = backend.create_layer(spec, options.batch);
    const std::size_t in = batch * static_cast<std::size_t>(spec.input.elements());
    const std::size_t out = batch * static_cast<std::size_t>(spec.output.elements());
    const std::size_t params = item.layer->parameter_count();
    std::vector<float> host(std::max({in, out, params}));
    fill_normal(host, random);
    item.in = buffers.make(in);
    item.out = buffers.make(out);
    item.grad_out = buffers.make(out);
    item.grad_in = buffers.make(in);
    item.params = buffers.make(params);
    item.grad_params = buffers.make(params);
    backend.copy_to_device(item.in, host.data(), in);
    backend.copy_to_device(item.grad_out, host.data(), out);
    for (float& value : host) value *= 0.01F;  // small weights, as an initialised layer has
    backend.copy_to_device(item.params, host.data(), params);
    flops += 3.0 * spec.forward_flops * options.batch;
    names += (names.empty() ? "" : ", ") + spec.name;
    layers.push_back(std::move(item));
  }
  Measured timing;
  timing.kernel_class = "gemm";
  if (layers.empty()) return timing;  // work 0: not measured
  timing.what = "forward+backward of " + model.name + "'s inner-product layers alone (" + names + "), batch " +
                std::to_string(options.batch) + ", " + threads_text(options.threads);
  timing.work = flops;
  timing.repetitions = options.repetitions;
  timing.samples = timed_samples(options, step, [&] {
    for (auto& item : layers) {
      item.layer->forward(item.in, item.out, item.params, true);
      item.layer->backward(item.in, item.out, item.grad_out, item.grad_in, item.params, item.grad_params);
    }
    backend.synchronize();
  });
  return timing;
}

// One timed kernel of an iteration: its timing and what it runs.
struct IterationKernel {
  Measured timing;
  std::function<void()> body;
};

// The kernels of one worker's iteration, in the order the Trainer runs them, timed one by one in each repetition:
//   copy         the batch load (data::fill_batch + copy_to_device) from a training set of `dataset_images`
//   conv         nn::Network::train_step on that batch
//   elementwise  nn::Sgd::step of the network's own parameters from the gradients train_step left
//   memory       a memcpy of the parameter vector (what an exchange or a model copy moves)
// Timing each kernel back to back instead would start it with the caches its own previous repetition left (a
// LeNet's parameters and activations fit in L2/L3), while in training it starts with the caches the previous kernel
// of the iteration left (docs/validation.md "Iteration order"; the numbers: docs/validation-log.md).
// With concurrent copies every repetition starts at a barrier, as a synchronous iteration does.
std::vector<Measured> time_iteration(const ModelSpec& model, const KernelBenchOptions& options, nn::Backend& backend,
                                     std::mt19937_64& random, const Step& step) {
  data::Dataset dataset;
  dataset.name = "synthetic";
  dataset.channels = static_cast<int>(model.input.channels);
  dataset.height = static_cast<int>(model.input.height);
  dataset.width = static_cast<int>(model.input.width);
  dataset.classes = static_cast<int>(model.classes);
  dataset.images.resize(options.dataset_images * dataset.image_size());
  fill_normal(dataset.images, random);
  dataset.labels.resize(options.dataset_images);
  for (std::size_t i = 0; i < dataset.labels.size(); ++i) {
    dataset.labels[i] = static_cast<std::int32_t>(i % static_cast<std::size_t>(dataset.classes));
  }
  data::BatchSampler sampler(dataset.size(), static_cast<std::size_t>(options.batch), options.seed);
  const auto batch = static_cast<std::size_t>(options.batch);
  std::vector<float> host_images(batch * dataset.image_size());
  std::vector<float> host_labels(batch);
  Buffers buffers(backend);
  float* images = buffers.make(host_images.size());
  float* labels = buffers.make(host_labels.size());

  nn::Network network(model, backend, options.batch);
  network.initialize(options.seed);
  const std::size_t parameters = network.parameter_count();
  // A small step, so that repeated updates from the same kind of gradients keep the weights finite.
  nn::Sgd sgd(backend, parameters, nn::SgdOptions{.learning_rate = 1e-4F, .momentum = 0.9F, .weight_decay = 5e-4F});
  std::vector<float> model_copy(parameters);

  const std::string threads = threads_text(options.threads);
  const auto timing = [&](const char* kernel_class, std::string what, double work) {
    Measured measured;
    measured.kernel_class = kernel_class;
    measured.what = std::move(what) + ", timed in an iteration's order (batch load, forward+backward, update, memcpy)";
    measured.work = work;
    measured.repetitions = options.repetitions;
    measured.in_iteration = true;
    return measured;
  };
  std::vector<IterationKernel> kernels;
  // As Trainer::compute_gradient declares it: the batch's images and labels as floats.
  kernels.push_back(
      {timing("copy",
              "batch load (data::fill_batch + copy_to_device) of " + std::to_string(options.batch) + " " + model.name +
                  " images drawn from " + std::to_string(options.dataset_images) + " synthetic ones",
              static_cast<double>(batch) * static_cast<double>(model.input.elements() + 1) * sizeof(float)),
       [&] {
         data::fill_batch(dataset, sampler.next(), host_images, host_labels);
         backend.copy_to_device(images, host_images.data(), host_images.size());
         backend.copy_to_device(labels, host_labels.data(), host_labels.size());
         backend.synchronize();
       }});
  kernels.push_back({timing("conv",
                            "forward+backward of " + model.name + " (nn::Network::train_step), batch " +
                                std::to_string(options.batch) + ", " + threads,
                            3.0 * model.forward_flops() * options.batch),  // as Trainer::compute_gradient declares it
                     [&] {
                       network.train_step(images, labels);
                       backend.synchronize();
                     }});
  kernels.push_back({timing("elementwise",
                            "SGD update (nn::Sgd::step, momentum and weight decay) of the network's " +
                                std::to_string(parameters) + " parameters, " + threads,
                            4.0 * static_cast<double>(parameters)),  // as Trainer::sgd_step declares it
                     [&] {
                       sgd.step(network.parameters(), network.gradients());
                       backend.synchronize();
                     }});
  const std::size_t bytes = parameters * sizeof(float);
  kernels.push_back({timing("memory",
                            "memcpy of " + std::to_string(bytes) + " bytes (" + model.name +
                                "'s parameter vector: the working set of updates and exchanges), read + written bytes "
                                "counted",
                            2.0 * static_cast<double>(bytes)),
                     [&] {
                       backend.copy_to_host(model_copy.data(), network.parameters(), parameters);
                       backend.synchronize();
                     }});

  for (int i = 0; i < options.warmup + options.repetitions; ++i) {
    step.run([&] {
      for (auto& kernel : kernels) {
        const auto start = Clock::now();
        kernel.body();
        const double seconds = seconds_since(start);
        if (i >= options.warmup) kernel.timing.samples.push_back(seconds);
      }
    });
  }
  std::vector<Measured> timings;
  for (auto& kernel : kernels) timings.push_back(std::move(kernel.timing));
  return timings;
}

}  // namespace

double persistence(const std::vector<std::vector<double>>& samples_per_copy) {
  if (samples_per_copy.empty()) return 0;
  const std::size_t repetitions = samples_per_copy.front().size();
  if (repetitions < 3) return 0;
  for (const auto& copy : samples_per_copy) {
    if (copy.size() != repetitions) throw InternalError("kernel persistence: copies of unequal repetitions");
    for (const double sample : copy) {
      if (!(sample > 0)) return 0;
    }
  }
  const std::size_t copies = samples_per_copy.size();
  std::vector<double> common(repetitions, 0.0);  // the copies' mean log(time) per repetition
  if (copies > 1) {
    for (std::size_t i = 0; i < repetitions; ++i) {
      for (const auto& copy : samples_per_copy) common[i] += std::log(copy[i]);
      common[i] /= static_cast<double>(copies);
    }
  }
  double sum = 0;
  for (const auto& copy : samples_per_copy) {
    std::vector<double> deviation(repetitions);
    for (std::size_t i = 0; i < repetitions; ++i) deviation[i] = std::log(copy[i]) - common[i];
    double mean = 0;
    for (const double d : deviation) mean += d;
    mean /= static_cast<double>(repetitions);
    double lagged = 0;
    double variance = 0;
    for (std::size_t i = 0; i < repetitions; ++i) {
      variance += (deviation[i] - mean) * (deviation[i] - mean);
      if (i + 1 < repetitions) lagged += (deviation[i] - mean) * (deviation[i + 1] - mean);
    }
    // A spread below 1e-9 in log(time) is rounding, not a copy being slower (copies that differ by a constant factor).
    constexpr double kRounding = 1e-9;
    if (!(variance > kRounding * kRounding * static_cast<double>(repetitions))) return 0;
    sum += lagged / variance;
  }
  return sum / static_cast<double>(copies);
}

double log_spread(std::vector<double> samples) {
  if (samples.size() < 4) return 0;
  std::sort(samples.begin(), samples.end());
  const auto quantile = [&](double q) {
    const double at = q * static_cast<double>(samples.size() - 1);
    const auto below = static_cast<std::size_t>(at);
    const double above = below + 1 < samples.size() ? samples[below + 1] : samples[below];
    return samples[below] + (at - static_cast<double>(below)) * (above - samples[below]);
  };
  const double q1 = quantile(0.25);
  const double q3 = quantile(0.75);
  if (!(q1 > 0)) return 0;
  constexpr double kNormalIqr = 1.349;  // the interquartile range of a standard normal
  return std::log(q3 / q1) / kNormalIqr;
}

namespace {

// One copy of the benchmark: the inner products alone, then an iteration's kernels.
std::vector<Measured> measure_copy(const ModelSpec& model, const KernelBenchOptions& options, const Step& step) {
  nn::BackendOptions backend_options;
  backend_options.threads = options.threads;
  backend_options.seed = options.seed;
  const auto backend = nn::make_backend("cpu", backend_options);
  std::mt19937_64 random(options.seed);
  std::vector<Measured> timings{time_inner_products(model, options, *backend, random, step)};
  for (auto& timing : time_iteration(model, options, *backend, random, step)) timings.push_back(std::move(timing));
  return timings;
}

}  // namespace

KernelCalibration measure_kernels(const KernelBenchOptions& options) {
  if (options.batch < 1) throw InputError("kernel calibration: the batch must be at least 1");
  if (options.threads < 1) throw InputError("kernel calibration: threads must be at least 1");
  if (options.concurrent < 1) throw InputError("kernel calibration: concurrent copies must be at least 1");
  if (options.repetitions < 1) throw InputError("kernel calibration: repetitions must be at least 1");
  if (options.warmup < 0) throw InputError("kernel calibration: warm-up repetitions must be >= 0");
  if (options.dataset_images < 1) throw InputError("kernel calibration: the synthetic training set needs images");
  const ModelSpec model = build_model(options.model);

  // The copies in step; the first error of any copy is rethrown (the others finish their sequence: a copy that
  // threw drops out of the barrier so they do not wait for it).
  std::vector<std::vector<Measured>> copies(static_cast<std::size_t>(options.concurrent));
  std::barrier<> barrier(options.concurrent);
  std::vector<std::exception_ptr> errors(copies.size());
  std::vector<std::thread> threads;
  for (std::size_t copy = 0; copy < copies.size(); ++copy) {
    threads.emplace_back([&, copy] {
      try {
        const bool several = options.concurrent > 1;
        const Step step{several ? &barrier : nullptr, static_cast<int>(copy),
                        several && options.turns ? options.concurrent : 0};
        copies[copy] = measure_copy(model, options, step);
      } catch (...) {
        errors[copy] = std::current_exception();
        barrier.arrive_and_drop();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }

  const bool turns = options.concurrent > 1 && options.turns;
  KernelCalibration calibration;
  calibration.threads = options.threads;
  calibration.concurrent = turns ? 1 : options.concurrent;
  std::string alongside;
  if (turns) {
    alongside = ", " + std::to_string(options.concurrent) +
                " copies on their own threads taking turns (one computing, the others waiting at a barrier)";
  } else if (options.concurrent > 1) {
    alongside =
        ", each of " + std::to_string(options.concurrent) + " copies at once on its own thread (all cores busy)";
  }
  for (std::size_t k = 0; k < copies.front().size(); ++k) {
    KernelTiming merged = copies.front()[k];
    std::vector<double> samples;
    for (const auto& copy : copies) samples.insert(samples.end(), copy[k].samples.begin(), copy[k].samples.end());
    if (merged.work <= 0) continue;  // a class this model lacks (no inner-product layer)
    merged.what += alongside;
    merged.repetitions = static_cast<int>(samples.size());
    merged.log_spread = log_spread(samples);
    std::vector<std::vector<double>> per_copy;
    for (const auto& copy : copies) per_copy.push_back(copy[k].samples);
    merged.persistence = persistence(per_copy);
    double sum_s = 0;
    for (const double sample : samples) sum_s += sample;
    if (!samples.empty()) merged.mean_s = sum_s / static_cast<double>(samples.size());
    if (copies.front()[k].in_iteration) calibration.iteration_s += merged.mean_s;
    if (copies.size() > 1 && !turns && options.repetitions > 0) {
      double slowest = 0;
      for (std::size_t i = 0; i < copies.front()[k].samples.size(); ++i) {
        double longest = 0;
        for (const auto& copy : copies) longest = std::max(longest, copy[k].samples[i]);
        slowest += longest;
      }
      slowest /= static_cast<double>(copies.front()[k].samples.size());
      if (merged.mean_s > 0) merged.slowest_ratio = slowest / merged.mean_s;
    }
    merged.median_s = median(std::move(samples));
    if (merged.kernel_class == "memory") {
      calibration.memory = merged;
    } else {
      calibration.kernels.push_back(merged);
    }
  }
  return calibration;
}

namespace {

// E[max of `copies` draws] of exp(sigma Z - sigma^2 / 2), Z standard normal: the integral over z of
// copies x factor(z) x phi(z) x Phi(z)^(copies - 1), by the trapezoid rule on [-10, 10].
double expected_slowest(double sigma, int copies) {
  constexpr int kSteps = 4000;
  constexpr double kFrom = -10;
  constexpr double kTo = 10;
  const double step = (kTo - kFrom) / kSteps;
  double sum = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double z = kFrom + step * i;
    const double density = std::exp(-z * z / 2) / std::sqrt(2 * std::numbers::pi);
    const double below = 0.5 * std::erfc(-z / std::numbers::sqrt2);
    const double value = copies * std::exp(sigma * z - sigma * sigma / 2) * density * std::pow(below, copies - 1);
    sum += (i == 0 || i == kSteps ? 0.5 : 1.0) * value;
  }
  return sum * step;
}

}  // namespace

double lognormal_sigma_for_slowest(double ratio, int copies) {
  if (copies < 2) throw InputError("kernel calibration: the slowest of " + std::to_string(copies) + " copies");
  constexpr double kMaxSigma = 2;
  if (!(ratio > 1)) return 0;
  if (expected_slowest(kMaxSigma, copies) <= ratio) return kMaxSigma;
  double low = 0;
  double high = kMaxSigma;
  for (int i = 0; i < 60; ++i) {
    const double mid = (low + high) / 2;
    (expected_slowest(mid, copies) < ratio ? low : high) = mid;
  }
  return (low + high) / 2;
}

double kernel_efficiency(const KernelTiming& timing, double peak) {
  if (!(peak > 0)) throw InputError("kernel calibration: the peak for class '" + timing.kernel_class + "' is not > 0");
  if (!(timing.work > 0) || !(timing.charged_s() > 0)) {
    throw InputError("kernel calibration: class '" + timing.kernel_class + "' has no positive work and time");
  }
  constexpr double kNoise = 1.05;
  const double fraction = timing.rate() / peak;
  if (fraction > kNoise) {
    throw InputError("kernel calibration: class '" + timing.kernel_class + "' ran at " + format("%.3g", timing.rate()) +
                     " per second, " + format("%.2f", fraction) + " x its peak of " + format("%.3g", peak) +
                     ": the peak is wrong (a clock below the real one?)");
  }
  return std::min(fraction, 1.0);
}

void apply_kernel_calibration(platforms::Platform& platform, const KernelCalibration& calibration,
                              const std::string& where, const KernelCalibration* alone) {
  if (alone != nullptr && alone->concurrent != 1) {
    throw InputError("kernel calibration: the timing alone ran " + std::to_string(alone->concurrent) +
                     " copies at once, not 1");
  }
  auto& cpu = platform.nodes.cpu;
  if (cpu.cores() > calibration.threads) {
    throw InputError("kernel calibration: the platform's hosts have " + std::to_string(cpu.cores()) +
                     " cores but the kernels ran on " + threads_text(calibration.threads));
  }
  const std::string measured = "measured by dsgd calibrate on " + where + ": ";
  const auto cite_from = [&](const KernelCalibration& from, const KernelTiming& timing) {
    return measured + timing.what + ", " + std::to_string(timing.repetitions) + " repetitions, mean " +
           format("%.4g", timing.charged_s() * 1e3) + " ms (median " + format("%.4g", timing.median_s * 1e3) +
           " ms), while other programs kept " + format("%.2f", from.others_cores) + " cores busy";
  };
  const auto cite = [&](const KernelTiming& timing) { return cite_from(calibration, timing); };

  // A kernel faster than the derived peak means the clock is higher than /proc/cpuinfo's nominal one (the cores
  // boost): the clock becomes the least one that explains the fastest kernel, so no efficiency exceeds 1.
  const KernelTiming* fastest = nullptr;
  const KernelCalibration* fastest_from = &calibration;
  for (const KernelCalibration* from : {&calibration, alone}) {
    if (from == nullptr) continue;
    for (const auto& timing : from->kernels) {
      if (timing.kernel_class != "copy" && timing.work > 0 && timing.charged_s() > 0 &&
          (fastest == nullptr || timing.rate() > fastest->rate())) {
        fastest = &timing;
        fastest_from = from;
      }
    }
  }
  if (fastest != nullptr && fastest->rate() > cpu.peak_flops && cpu.sp_flops_per_cycle_per_core > 0) {
    const double nominal_Hz = cpu.clock_Hz;
    cpu.clock_Hz = fastest->rate() / (cpu.cores() * cpu.sp_flops_per_cycle_per_core);
    cpu.peak_flops = cpu.clock_Hz * cpu.cores() * cpu.sp_flops_per_cycle_per_core;
    const std::string why = "; raised from the nominal " + format("%.6g", nominal_Hz) + " Hz because class '" +
                            fastest->kernel_class + "' ran at " + format("%.4g", fastest->rate() / 1e9) + " GFLOP/s (" +
                            cite_from(*fastest_from, *fastest) + "), above the nominal peak: the cores boost";
    cpu.sources["clock_Hz"] = "derived: the least clock that explains the fastest measured kernel" + why;
    cpu.sources["peak_flops"] = "derived: " + std::to_string(cpu.cores()) + " core(s) x " +
                                format("%.6g", cpu.clock_Hz) + " Hz x " +
                                format("%g", cpu.sp_flops_per_cycle_per_core) + " FLOP/cycle" + why;
  }

  // The memory first: "copy" is a fraction of its bandwidth.
  if (!(calibration.memory.work > 0) || !(calibration.memory.median_s > 0)) {
    throw InputError("kernel calibration: the memory bandwidth memcpy has no positive bytes and time");
  }
  // A bandwidth is a capability, so it is the median's rate: one repetition of a 0.1 ms memcpy preempted for a
  // scheduler tick would move the mean of a few by a multiple (and "copy" would then seem faster than memory).
  double bandwidth = calibration.memory.work / calibration.memory.median_s;
  std::string bandwidth_source = cite(calibration.memory) + "; the median's rate";
  // Likewise a "copy" kernel faster than that memcpy means the memcpy was slowed (another program on the memory
  // bus while it ran): the bandwidth becomes the least one that explains the fastest copy, so no efficiency
  // exceeds 1 on a machine that was busy when calibrated.
  for (const KernelCalibration* from : {&calibration, alone}) {
    if (from == nullptr) continue;
    for (const auto& timing : from->kernels) {
      if (timing.kernel_class == "copy" && timing.work > 0 && timing.charged_s() > 0 && timing.rate() > bandwidth) {
        bandwidth_source += "; raised from " + format("%.4g", bandwidth / 1e9) + " GB/s to the copy kernel's " +
                            format("%.4g", timing.rate() / 1e9) + " GB/s (" + cite_from(*from, timing) + ")";
        bandwidth = timing.rate();
      }
    }
  }
  auto& memories = platform.nodes.memories;
  memories.erase(std::remove_if(memories.begin(), memories.end(),
                                [](const auto& memory) { return memory.name == kMeasuredMemoryName; }),
                 memories.end());
  platforms::Memory memory;
  memory.name = kMeasuredMemoryName;
  memory.bandwidth_Bps = bandwidth;
  memory.sources["bandwidth_Bps"] = bandwidth_source;
  memories.insert(memories.begin(), std::move(memory));

  const auto efficiencies = [&](const KernelCalibration& from, platforms::KernelEfficiency& efficiency) {
    for (const auto& timing : from.kernels) {
      const bool copy = timing.kernel_class == "copy";
      const double peak = copy ? bandwidth : cpu.peak_flops;
      efficiency.by_class[timing.kernel_class] = kernel_efficiency(timing, peak);
      efficiency.sources[timing.kernel_class] = cite_from(from, timing) + " = " + format("%.4g", timing.rate() / 1e9) +
                                                (copy ? " GB/s" : " GFLOP/s") + " over " +
                                                (copy ? "the measured memory bandwidth " : "the peak ") +
                                                format("%.4g", peak / 1e9) + (copy ? " GB/s" : " GFLOP/s");
    }
  };
  efficiencies(calibration, cpu.efficiency);

  for (const auto& timing : calibration.kernels) {
    if (timing.kernel_class != "conv") continue;
    platform.noise = {};
    const bool slowest = calibration.concurrent > 1 && timing.slowest_ratio > 1;
    const double sigma =
        slowest ? lognormal_sigma_for_slowest(timing.slowest_ratio, calibration.concurrent) : timing.log_spread;
    if (!(sigma > 0)) {
      platform.noise.description = "not measured: the forward/backward's repetitions had no spread (fewer than 4?)";
      continue;
    }
    platform.noise.distribution = platforms::NoiseDistribution::kLognormal;
    platform.noise.spread = sigma;
    platform.noise.description =
        "the spread of the forward/backward's repetitions with every core busy, measured by dsgd calibrate";
    platform.noise.sources = {
        {"sigma",
         slowest ? "fitted to the microbenchmark (" + cite(timing) + "): the slowest of its " +
                       std::to_string(calibration.concurrent) + " copies took " + format("%.4f", timing.slowest_ratio) +
                       " x the mean time per repetition, which the slowest of as many lognormal factors of sigma " +
                       format("%.4g", sigma) + " takes on average"
                 : cite(timing) + ": sigma of log(time) from the interquartile range, IQR/1.349 = " +
                       format("%.4g", timing.log_spread)}};
    if (timing.persistence > 0 && calibration.iteration_s > 0) {
      constexpr double kMostPersistence = 0.99;  // beyond, tens of repetitions cannot tell it from a drift
      const double persistence = std::min(timing.persistence, kMostPersistence);
      platform.noise.correlation_s = -calibration.iteration_s / std::log(persistence);
      platform.noise.sources["correlation_s"] =
          "fitted to the microbenchmark (" + cite(timing) + "): the lag-1 autocorrelation of " +
          (calibration.concurrent > 1 ? "what set the copies apart" : "log(time)") + " was " +
          format("%.3f", timing.persistence) + " at one repetition every " +
          format("%.4g", calibration.iteration_s * 1e3) + " ms, which an Ornstein-Uhlenbeck process of this " +
          "correlation time has";
    }
  }

  platform.nodes.shared_chip.reset();
  if (alone == nullptr) return;
  platforms::SharedChip chip;
  chip.nodes = platform.nodes.count;
  chip.cores = calibration.concurrent;
  chip.sources["nodes"] = "modelling choice: every host of " + where + " is one core of its one chip";
  chip.sources["cores"] = "the physical cores the kernels ran on at once (" + std::to_string(calibration.concurrent) +
                          " copies) on " + where;
  efficiencies(*alone, chip.alone);
  platform.nodes.shared_chip = std::move(chip);
}

std::string describe(const KernelTiming& timing) {
  const bool bytes = timing.kernel_class == "copy" || timing.kernel_class == "memory";
  return timing.kernel_class + ": " + timing.what + ": " + format("%.4g", timing.charged_s() * 1e3) + " ms mean of " +
         std::to_string(timing.repetitions) + " (median " + format("%.4g", timing.median_s * 1e3) +
         " ms, spread of log(time) " + format("%.3f", timing.log_spread) +
         (timing.slowest_ratio > 0 ? ", slowest copy " + format("%.3f", timing.slowest_ratio) + " x the mean" : "") +
         ", lag-1 persistence " + format("%.2f", timing.persistence) + "), " + format("%.4g", timing.rate() / 1e9) +
         (bytes ? " GB/s" : " GFLOP/s");
}

}  // namespace dsgd::measure
