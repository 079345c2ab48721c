// Batch normalisation on cuDNN (spatial mode: one mean and variance per channel over batch x height x width), with
// the CPU back end's semantics: a trained scale and shift per channel (the packed slice holds scale then shift);
// training normalises with the batch's statistics and folds them into running statistics (momentum 0.1; cuDNN, like
// the CPU back end and PyTorch, folds in the unbiased variance); evaluation uses the running statistics, which are
// state of the layer, not parameters.

#include <string>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"
#include "core/nn/cuda/kernels.hpp"

namespace dsgd::nn::cuda {
namespace {

constexpr double kEpsilon = 1e-5;
constexpr double kMomentum = 0.1;

class BatchNorm final : public CudaLayer {
 public:
  BatchNorm(std::shared_ptr<Context> context, const LayerSpec& spec, int batch)
      : CudaLayer(std::move(context), spec, batch) {
    const std::int64_t channels = spec.input.channels;
    if (!(spec.input == spec.output) || spec.parameters != 2 * channels) {
      throw InputError("batch norm '" + spec.name + "': output shape differs from input shape, or parameters are not " +
                       std::to_string(2 * channels) + " (scale and shift per channel)");
    }
    channels_ = static_cast<std::size_t>(channels);
    set_nchw(data_, batch, spec.input);
    check_call(cudnnDeriveBNTensorDescriptor(per_channel_.get(), data_.get(), CUDNN_BATCHNORM_SPATIAL),
               "cudnnDeriveBNTensorDescriptor");
    const Context& ctx = *context_;
    running_mean_ = DeviceBuffer(ctx, channels_);
    running_variance_ = DeviceBuffer(ctx, channels_);
    saved_mean_ = DeviceBuffer(ctx, channels_);
    saved_inverse_std_ = DeviceBuffer(ctx, channels_);
    check_call(launch_fill(running_variance_.get(), 1.0f, channels_, ctx.stream()), "fill kernel (running variance)");
  }

  void forward(const float* in, float* out, const float* params, bool training) override {
    Context& ctx = activated();
    const float* scale = params;
    const float* shift = params + channels_;
    if (!training) {
      check_call(cudnnBatchNormalizationForwardInference(ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero,
                                                         data_.get(), in, data_.get(), out, per_channel_.get(), scale,
                                                         shift, running_mean_.get(), running_variance_.get(), kEpsilon),
                 "cudnnBatchNormalizationForwardInference");
      return;
    }
    check_call(cudnnBatchNormalizationForwardTraining(ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, data_.get(),
                                                      in, data_.get(), out, per_channel_.get(), scale, shift, kMomentum,
                                                      running_mean_.get(), running_variance_.get(), kEpsilon,
                                                      saved_mean_.get(), saved_inverse_std_.get()),
               "cudnnBatchNormalizationForwardTraining");
    saved_ = true;
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in, const float* params,
                float* grad_params) override {
    Context& ctx = activated();
    // cuDNN always writes the input gradient; the first layer of a network gets a scratch buffer.
    if (grad_in == nullptr) {
      if (!scratch_grad_in_) scratch_grad_in_ = DeviceBuffer(ctx, in_count());
      grad_in = scratch_grad_in_.get();
    }
    // The last training batch's statistics; without one, cuDNN recomputes them from `in`.
    const float* mean = saved_ ? saved_mean_.get() : nullptr;
    const float* inverse_std = saved_ ? saved_inverse_std_.get() : nullptr;
    check_call(
        cudnnBatchNormalizationBackward(ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero, data_.get(),
                                        in, data_.get(), grad_out, data_.get(), grad_in, per_channel_.get(), params,
                                        grad_params, grad_params + channels_, kEpsilon, mean, inverse_std),
        "cudnnBatchNormalizationBackward");
  }

 private:
  std::size_t channels_ = 0;
  TensorDescriptor data_;
  TensorDescriptor per_channel_;  // 1 x C x 1 x 1, for scale, shift and the statistics
  DeviceBuffer running_mean_, running_variance_;
  DeviceBuffer saved_mean_, saved_inverse_std_;  // the last training batch's, for backward
  bool saved_ = false;
  DeviceBuffer scratch_grad_in_;
};

}  // namespace

std::unique_ptr<Layer> make_batch_norm(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) {
  return std::make_unique<BatchNorm>(std::move(context), spec, batch);
}

}  // namespace dsgd::nn::cuda
