#include "measure/layer_profile.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <ostream>
#include <thread>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/layer_kernels.hpp"
#include "core/memory.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/random.hpp"
#include "core/stats.hpp"
#include "core/stopwatch.hpp"
#include "measure/background_load.hpp"

namespace dsgd::measure {

namespace {

using platforms::ProfileKey;
using platforms::ProfilePhase;
using Clock = std::chrono::steady_clock;

// Back-end memory of `count` seeded floats in [-1, 1) (labels: integers in [0, classes)).
class Buffer {
 public:
  Buffer(nn::Backend& backend, std::size_t count, std::uint64_t seed, int classes = 0)
      : backend_(backend), data_(backend.allocate(std::max<std::size_t>(count, 1))) {
    std::vector<float> host(std::max<std::size_t>(count, 1));
    for (std::size_t i = 0; i < host.size(); ++i) {
      const float unit = nn::unit_float(nn::random_bits(seed, i));
      host[i] = classes > 0 ? static_cast<float>(static_cast<int>(unit * static_cast<float>(classes)) % classes)
                            : 2.0f * unit - 1.0f;
    }
    backend.copy_to_device(data_, host.data(), host.size());
  }
  ~Buffer() { backend_.release(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* get() const { return data_; }

 private:
  nn::Backend& backend_;
  float* data_;
};

// The median of `repetitions` timed runs of `run` after `warmup` untimed ones, each ended by a synchronize.
template <typename Run>
double median_time(nn::Backend& backend, const LayerRun& options, Run&& run) {
  for (int i = 0; i < options.warmup; ++i) run();
  backend.synchronize();
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(options.repetitions));
  for (int i = 0; i < options.repetitions; ++i) {
    const auto start = Clock::now();
    run();
    backend.synchronize();
    times.push_back(seconds_since(start));
  }
  // A kernel faster than the clock's resolution still costs something: never a zero time.
  return std::max(median(std::move(times)), 1e-9);
}

void check_options(const LayerProfileOptions& options) {
  if (options.models.empty() || options.batches.empty() || options.threads.empty()) {
    throw InputError("calibrate --layers: give at least one model, batch and thread count");
  }
  if (options.repetitions < 1 || options.warmup < 0) {
    throw InputError("calibrate --layers: repetitions must be at least 1 and warm-up runs at least 0");
  }
  const int processors = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (const int threads : options.threads) {
    if (threads < 1 || threads > processors) {
      throw InputError("calibrate --layers: " + std::to_string(threads) + " threads; this machine has " +
                       std::to_string(processors) + " processors");
    }
  }
  for (const std::int64_t batch : options.batches) {
    if (batch < 1 || batch > (1 << 20)) {
      throw InputError("calibrate --layers: batch " + std::to_string(batch) + " is not in [1, 2^20]");
    }
  }
}

// Times each layer of `model` at `batch` on `backend`, adding its kernels to `profile` under `threads`.
void profile_model(nn::Backend& backend, const ModelSpec& model, std::int64_t batch, int threads,
                   const LayerProfileOptions& options, platforms::KernelProfile& profile) {
  for (std::size_t index = 0; index < model.layers.size(); ++index) {
    const LayerSpec& spec = model.layers[index];
    const LayerRun run{.repetitions = options.repetitions,
                       .warmup = options.warmup,
                       .seed = options.seed,
                       .input_gradient = index != 0,
                       .loss = spec.kind == LayerKind::kSoftmax && index + 1 == model.layers.size()};
    const auto seconds = time_layer(backend, spec, batch, run);
    if (!seconds) continue;
    profile.add(ProfileKey{model.name, spec.name, ProfilePhase::kForward, threads}, batch, seconds->forward);
    profile.add(ProfileKey{model.name, spec.name, ProfilePhase::kBackward, threads}, batch, seconds->backward);
  }
}

}  // namespace

std::optional<LayerSeconds> time_layer(nn::Backend& backend, const LayerSpec& spec, std::int64_t batch,
                                       const LayerRun& run) {
  const int images = static_cast<int>(batch);
  const auto in_count = static_cast<std::size_t>(batch * spec.input.elements());
  const auto out_count = static_cast<std::size_t>(batch * spec.output.elements());
  if (run.loss) {
    const auto classes = static_cast<int>(spec.input.elements());
    Buffer logits(backend, in_count, run.seed), labels(backend, static_cast<std::size_t>(batch), run.seed + 1, classes);
    Buffer grad(backend, in_count, run.seed + 2);
    const double seconds = median_time(backend, run, [&] {
      backend.softmax_cross_entropy(logits.get(), labels.get(), images, classes, grad.get(), nullptr);
    });
    return LayerSeconds{seconds / 2, seconds / 2};
  }
  std::unique_ptr<nn::Layer> layer;
  try {
    layer = backend.create_layer(spec, images);
  } catch (const UnavailableError&) {
    return std::nullopt;
  }
  const std::size_t params = layer->parameter_count();
  Buffer in(backend, in_count, run.seed), out(backend, out_count, run.seed + 1);
  Buffer weights(backend, params, run.seed + 2), grad_out(backend, out_count, run.seed + 3);
  Buffer grad_in(backend, in_count, run.seed + 4), grad_weights(backend, params, run.seed + 5);
  LayerSeconds seconds;
  seconds.forward = median_time(backend, run, [&] { layer->forward(in.get(), out.get(), weights.get(), true); });
  seconds.backward = median_time(backend, run, [&] {
    layer->backward(in.get(), out.get(), grad_out.get(), run.input_gradient ? grad_in.get() : nullptr, weights.get(),
                    grad_weights.get());
  });
  return seconds;
}

LayerProfile measure_layer_profile(const LayerProfileOptions& options, const std::string& where, std::ostream& err) {
  check_options(options);
  std::vector<ModelSpec> models;
  for (const auto& name : options.models) models.push_back(build_model(name));
  const std::int64_t largest_batch = *std::max_element(options.batches.begin(), options.batches.end());
  for (const ModelSpec& model : models) {
    double bytes = 0;
    for (const LayerSpec& layer : model.layers) bytes = std::max(bytes, layer_alone_bytes(layer, largest_batch));
    check_available_memory(bytes, "a layer of " + model.name + " at batch " + std::to_string(largest_batch));
  }
  LayerProfile result;
  std::string device;
  const CpuClock start = CpuClock::now();
  for (const int threads : options.threads) {
    const auto backend = nn::make_backend(options.backend, {.threads = threads, .seed = options.seed});
    // The back end's description names its thread count: keep the first, and say that each kernel has its own.
    if (device.empty()) {
      device = backend->description();
      if (options.threads.size() > 1) device += "; each kernel's threads as it lists them";
    }
    for (const ModelSpec& model : models) {
      for (const std::int64_t batch : options.batches) {
        const auto step = Clock::now();
        profile_model(*backend, model, batch, threads, options, result.profile);
        err << "calibrate: layers of " << model.name << ", batch " << batch << ", " << threads << " thread"
            << (threads == 1 ? "" : "s") << ": " << significant(seconds_since(step), 3) << " s" << std::endl;
      }
    }
  }
  result.others_cores = CpuClock::now().others_cores_since(start);
  result.profile.device = device;
  result.profile.source = "measured by dsgd calibrate --layers on " + where + ": the back end's kernels, each layer " +
                          "alone, median of " + std::to_string(options.repetitions) + " after " +
                          std::to_string(options.warmup) + " warm-up runs, while other programs kept " +
                          fixed(result.others_cores, 2) + " cores busy";
  return result;
}

}  // namespace dsgd::measure
