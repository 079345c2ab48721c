// Inner product (fully connected) on OpenBLAS SGEMM, row-major, weights W as out x in:
//   forward   out = in W^T + b        (batch x out)
//   backward  dW  = grad_out^T in     (out x in)
//             dX  = grad_out W        (batch x in)
//             db  = column sums of grad_out
// OpenBLAS's OpenMP build takes its thread count from OpenMP (ScopedThreads), so it never oversubscribes.

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"

namespace dsgd::nn::cpu {
namespace {

class InnerProduct final : public CpuLayer {
 public:
  InnerProduct(Context& context, const LayerSpec& spec, int batch)
      : CpuLayer(context, spec, batch), inputs_(spec.input.elements()), outputs_(spec.output.elements()) {
    if (spec.output.height != 1 || spec.output.width != 1 || spec.parameters != outputs_ * inputs_ + outputs_) {
      throw InputError("inner product '" + spec.name + "': expected an output of C x 1 x 1 and " +
                       std::to_string(outputs_ * inputs_ + outputs_) + " parameters, got " +
                       std::to_string(spec.parameters));
    }
    if (inputs_ > INT_MAX || outputs_ > INT_MAX || outputs_ * inputs_ > INT_MAX) {
      throw InputError("inner product '" + spec.name + "': " + std::to_string(outputs_) + " x " +
                       std::to_string(inputs_) + " weights exceed BLAS's 32-bit sizes");
    }
  }

  void forward(const float* in, float* out, const float* params, bool /*training*/) override {
    ScopedThreads threads(context_.threads);
    const float* bias = params + outputs_ * inputs_;
    for (int row = 0; row < batch_; ++row) std::copy(bias, bias + outputs_, out + row * outputs_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch_, n(), k(), 1.0f, in, k(), params, k(), 1.0f, out, n());
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in, const float* params,
                float* grad_params) override {
    ScopedThreads threads(context_.threads);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n(), k(), batch_, 1.0f, grad_out, n(), in, k(), 0.0f,
                grad_params, k());
    if (grad_in != nullptr) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch_, k(), n(), 1.0f, grad_out, n(), params, k(), 0.0f,
                  grad_in, k());
    }
    // Rows summed in order, so the bias gradient does not depend on the thread count.
    float* grad_bias = grad_params + outputs_ * inputs_;
    std::copy(grad_out, grad_out + outputs_, grad_bias);
    for (int row = 1; row < batch_; ++row) {
      const float* g = grad_out + row * outputs_;
#pragma omp simd
      for (std::int64_t j = 0; j < outputs_; ++j) grad_bias[j] += g[j];
    }
  }

 private:
  int n() const { return static_cast<int>(outputs_); }
  int k() const { return static_cast<int>(inputs_); }

  std::int64_t inputs_;
  std::int64_t outputs_;
};

}  // namespace

std::unique_ptr<Layer> make_inner_product(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<InnerProduct>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
