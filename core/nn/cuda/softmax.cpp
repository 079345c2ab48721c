// A stand-alone softmax layer over each image's C x H x W values on cuDNN (a network's final softmax is not one of
// these: Network hands it to Backend::softmax_cross_entropy as the loss). Backward needs only forward's output.

#include <string>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"

namespace dsgd::nn::cuda {
namespace {

class Softmax final : public CudaLayer {
 public:
  Softmax(std::shared_ptr<Context> context, const LayerSpec& spec, int batch)
      : CudaLayer(std::move(context), spec, batch) {
    check_shape_preserving("softmax", spec);
    set_nchw(data_, batch, spec.input);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    Context& ctx = activated();
    // ACCURATE subtracts each image's maximum first; INSTANCE normalises over all of C x H x W, as the CPU does.
    check_call(cudnnSoftmaxForward(ctx.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne, data_.get(),
                                   in, &kZero, data_.get(), out),
               "cudnnSoftmaxForward");
  }

  void backward(const float* /*in*/, const float* out, const float* grad_out, float* grad_in, const float* /*params*/,
                float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    Context& ctx = activated();
    check_call(cudnnSoftmaxBackward(ctx.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne,
                                    data_.get(), out, data_.get(), grad_out, &kZero, data_.get(), grad_in),
               "cudnnSoftmaxBackward");
  }

 private:
  TensorDescriptor data_;
};

}  // namespace

std::unique_ptr<Layer> make_softmax(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) {
  return std::make_unique<Softmax>(std::move(context), spec, batch);
}

}  // namespace dsgd::nn::cuda
