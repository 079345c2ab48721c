// Local response normalisation across channels on cuDNN, with Caffe's AlexNet parameters (as the CPU back end):
//   out = in / (k + alpha / n * sum over n neighbouring channels of in^2)^beta, n = 5, alpha = 1e-4, beta = 0.75,
//   k = 1.
// cuDNN, like Caffe and oneDNN, divides alpha by the window size itself, so the numbers carry over unchanged.

#include <string>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"

namespace dsgd::nn::cuda {
namespace {

constexpr unsigned kLocalSize = 5;
constexpr double kAlpha = 1e-4;
constexpr double kBeta = 0.75;
constexpr double kK = 1.0;

class Lrn final : public CudaLayer {
 public:
  Lrn(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) : CudaLayer(std::move(context), spec, batch) {
    check_shape_preserving("local response norm", spec);
    set_nchw(data_, batch, spec.input);
    check_call(cudnnSetLRNDescriptor(lrn_.get(), kLocalSize, kAlpha, kBeta, kK), "cudnnSetLRNDescriptor");
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    Context& ctx = activated();
    check_call(cudnnLRNCrossChannelForward(ctx.cudnn(), lrn_.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, data_.get(),
                                           in, &kZero, data_.get(), out),
               "cudnnLRNCrossChannelForward");
  }

  void backward(const float* in, const float* out, const float* grad_out, float* grad_in, const float* /*params*/,
                float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    Context& ctx = activated();
    check_call(cudnnLRNCrossChannelBackward(ctx.cudnn(), lrn_.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, data_.get(),
                                            out, data_.get(), grad_out, data_.get(), in, &kZero, data_.get(), grad_in),
               "cudnnLRNCrossChannelBackward");
  }

 private:
  TensorDescriptor data_;
  LrnDescriptor lrn_;
};

}  // namespace

std::unique_ptr<Layer> make_lrn(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) {
  return std::make_unique<Lrn>(std::move(context), spec, batch);
}

}  // namespace dsgd::nn::cuda
