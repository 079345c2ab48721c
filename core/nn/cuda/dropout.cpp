// Dropout with p = 0.5 and inverted scaling, exactly as the CPU back end (core/nn/cpu/dropout.cpp): in training,
// element i of the k-th training forward is kept when unit_float(random_bits(stream + k, i)) >= p, with stream =
// mix64(seed) ^ name_hash(layer name) (core/nn/random.hpp), and scaled by 1 / (1 - p); evaluation is the identity.
// The kernel computes the mask from that counter-based hash, so forward stores nothing: backward recomputes the
// same mask from the same stream, and both back ends drop the same elements for the same seed.

#include <string>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"
#include "core/nn/cuda/kernels.hpp"
#include "core/nn/random.hpp"

namespace dsgd::nn::cuda {
namespace {

constexpr float kDropProbability = 0.5f;
constexpr float kKeepScale = 1.0f / (1.0f - kDropProbability);

class Dropout final : public CudaLayer {
 public:
  Dropout(std::shared_ptr<Context> context, const LayerSpec& spec, int batch)
      : CudaLayer(std::move(context), spec, batch), stream_(mix64(context_->seed()) ^ name_hash(spec.name)) {
    check_shape_preserving("dropout", spec);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool training) override {
    Context& ctx = activated();
    training_ = training;
    if (!training) {
      if (out != in) {
        check_call(cudaMemcpyAsync(out, in, out_count() * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream()),
                   "cudaMemcpyAsync (dropout in evaluation)");
      }
      return;
    }
    last_stream_ = stream_ + calls_++;
    check_call(launch_dropout(in, out, out_count(), last_stream_, kDropProbability, kKeepScale, ctx.stream()),
               "dropout kernel");
  }

  void backward(const float* /*in*/, const float* /*out*/, const float* grad_out, float* grad_in,
                const float* /*params*/, float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    Context& ctx = activated();
    if (!training_) {
      if (grad_in != grad_out) {
        check_call(
            cudaMemcpyAsync(grad_in, grad_out, out_count() * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream()),
            "cudaMemcpyAsync (dropout after evaluation)");
      }
      return;
    }
    // The last training forward's mask, recomputed.
    check_call(launch_dropout(grad_out, grad_in, out_count(), last_stream_, kDropProbability, kKeepScale, ctx.stream()),
               "dropout kernel");
  }

 private:
  std::uint64_t stream_;           // this layer's random stream: seed and name
  std::uint64_t calls_ = 0;        // training forwards so far: a fresh mask each batch
  std::uint64_t last_stream_ = 0;  // the stream of the last training forward, for backward
  bool training_ = false;          // whether the last forward dropped anything
};

}  // namespace

std::unique_ptr<Layer> make_dropout(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) {
  return std::make_unique<Dropout>(std::move(context), spec, batch);
}

}  // namespace dsgd::nn::cuda
