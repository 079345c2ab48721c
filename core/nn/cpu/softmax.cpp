// A stand-alone softmax layer over each image's C x H x W values (a network's final softmax is not one of these:
// Network hands it to Backend::softmax_cross_entropy as the loss). Forward y = exp(x - max) / sum; backward
// grad_in = y * (grad_out - sum(grad_out * y)), which needs only forward's output.

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"

namespace dsgd::nn::cpu {
namespace {

class Softmax final : public CpuLayer {
 public:
  Softmax(Context& context, const LayerSpec& spec, int batch) : CpuLayer(context, spec, batch) {
    check_shape_preserving("softmax", spec);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    ScopedThreads threads(context_.threads);
    const std::int64_t width = spec_.input.elements();
#pragma omp parallel for schedule(static) if (batch_ * width > (1 << 16))
    for (int row = 0; row < batch_; ++row) {
      const float* x = in + row * width;
      float* y = out + row * width;
      float max = x[0];
      for (std::int64_t i = 1; i < width; ++i) max = std::max(max, x[i]);
      double sum = 0;
      for (std::int64_t i = 0; i < width; ++i) sum += std::exp(static_cast<double>(x[i] - max));
      const double inverse = 1.0 / sum;
      for (std::int64_t i = 0; i < width; ++i)
        y[i] = static_cast<float>(std::exp(static_cast<double>(x[i] - max)) * inverse);
    }
  }

  void backward(const float* /*in*/, const float* out, const float* grad_out, float* grad_in, const float* /*params*/,
                float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    ScopedThreads threads(context_.threads);
    const std::int64_t width = spec_.input.elements();
#pragma omp parallel for schedule(static) if (batch_ * width > (1 << 16))
    for (int row = 0; row < batch_; ++row) {
      const float* y = out + row * width;
      const float* g = grad_out + row * width;
      float* d = grad_in + row * width;
      double dot = 0;
      for (std::int64_t i = 0; i < width; ++i) dot += static_cast<double>(g[i]) * y[i];
      for (std::int64_t i = 0; i < width; ++i) d[i] = static_cast<float>(y[i] * (g[i] - dot));
    }
  }
};

}  // namespace

std::unique_ptr<Layer> make_softmax(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<Softmax>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
