// ReLU on cuDNN's activation functions; backward passes the gradient where forward's input was positive (cuDNN
// reads forward's input and output).

#include <string>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"

namespace dsgd::nn::cuda {
namespace {

class Relu final : public CudaLayer {
 public:
  Relu(std::shared_ptr<Context> context, const LayerSpec& spec, int batch)
      : CudaLayer(std::move(context), spec, batch) {
    check_shape_preserving("relu", spec);
    set_nchw(data_, batch, spec.input);
    check_call(cudnnSetActivationDescriptor(activation_.get(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
               "cudnnSetActivationDescriptor");
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    Context& ctx = activated();
    check_call(cudnnActivationForward(ctx.cudnn(), activation_.get(), &kOne, data_.get(), in, &kZero, data_.get(), out),
               "cudnnActivationForward");
  }

  void backward(const float* in, const float* out, const float* grad_out, float* grad_in, const float* /*params*/,
                float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    Context& ctx = activated();
    check_call(cudnnActivationBackward(ctx.cudnn(), activation_.get(), &kOne, data_.get(), out, data_.get(), grad_out,
                                       data_.get(), in, &kZero, data_.get(), grad_in),
               "cudnnActivationBackward");
  }

 private:
  TensorDescriptor data_;  // input, output and both gradients share one shape
  ActivationDescriptor activation_;
};

}  // namespace

std::unique_ptr<Layer> make_relu(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) {
  return std::make_unique<Relu>(std::move(context), spec, batch);
}

}  // namespace dsgd::nn::cuda
