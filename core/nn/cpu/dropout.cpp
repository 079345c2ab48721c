// Dropout with p = 0.5 and inverted scaling: in training, each element is kept with probability 1 - p and scaled
// by 1 / (1 - p), so evaluation is the identity. The mask is a counter-based hash (core/nn/random.hpp) of the
// back end's seed, the layer's name, the number of training forwards so far and the element index: the same on
// any thread count, and reproducible from the seed alone.

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"
#include "core/nn/random.hpp"

namespace dsgd::nn::cpu {
namespace {

constexpr float kDropProbability = 0.5f;
constexpr float kKeepScale = 1.0f / (1.0f - kDropProbability);

class Dropout final : public CpuLayer {
 public:
  Dropout(Context& context, const LayerSpec& spec, int batch)
      : CpuLayer(context, spec, batch), stream_(mix64(context.seed) ^ name_hash(spec.name)) {
    check_shape_preserving("dropout", spec);
    mask_.assign(static_cast<std::size_t>(out_elements()), kKeepScale);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool training) override {
    ScopedThreads threads(context_.threads);
    const std::int64_t count = out_elements();
    float* mask = mask_.data();
    if (!training) {
      // Evaluation: the identity, and a backward after it passes gradients through.
      training_ = false;
#pragma omp parallel for simd schedule(static) if (count > (1 << 16))
      for (std::int64_t i = 0; i < count; ++i) out[i] = in[i];
      return;
    }
    training_ = true;
    const std::uint64_t stream = stream_ + calls_++;
#pragma omp parallel for schedule(static) if (count > (1 << 16))
    for (std::int64_t i = 0; i < count; ++i) {
      const bool keep = unit_float(random_bits(stream, static_cast<std::uint64_t>(i))) >= kDropProbability;
      mask[i] = keep ? kKeepScale : 0.0f;
      out[i] = in[i] * mask[i];
    }
  }

  void backward(const float* /*in*/, const float* /*out*/, const float* grad_out, float* grad_in,
                const float* /*params*/, float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    ScopedThreads threads(context_.threads);
    const std::int64_t count = out_elements();
    const float* mask = mask_.data();
    if (!training_) {
#pragma omp parallel for simd schedule(static) if (count > (1 << 16))
      for (std::int64_t i = 0; i < count; ++i) grad_in[i] = grad_out[i];
      return;
    }
#pragma omp parallel for simd schedule(static) if (count > (1 << 16))
    for (std::int64_t i = 0; i < count; ++i) grad_in[i] = grad_out[i] * mask[i];
  }

 private:
  std::uint64_t stream_;     // this layer's random stream: seed and name
  std::uint64_t calls_ = 0;  // training forwards so far: a fresh mask each batch
  bool training_ = false;    // whether the last forward dropped anything
  std::vector<float> mask_;  // 0 or 1 / (1 - p) per element, from the last training forward
};

}  // namespace

std::unique_ptr<Layer> make_dropout(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<Dropout>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
