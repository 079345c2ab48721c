// Convolution on cuDNN: forward, backward data and backward filter (cross-correlation, as Caffe and the CPU back
// end compute it), grouped convolution through cudnnSetConvolutionGroupCount; weights out x in/groups x kh x kw
// are exactly cuDNN's NCHW filter layout, so the packed slice is used in place. Bias: cudnnAddTensor forward,
// cudnnConvolutionBackwardBias backward.
//
// Algorithms are chosen once per layer from cuDNN's heuristics (cudnnGet*Algorithm_v7, which rank without running
// anything, so building a network is quick and the choice repeatable): the first in cuDNN's order that is
// deterministic (reproducible gradients), uses FP32 FMA arithmetic rather than TF32 tensor cores, and needs at most
// kWorkspaceLimitBytes; failing a deterministic one, the first non-deterministic one. The workspace is the back
// end's, shared by all its layers.

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"

namespace dsgd::nn::cuda {
namespace {

constexpr std::size_t kWorkspaceLimitBytes = std::size_t{512} << 20;

// The first acceptable entry of cuDNN's ranking (see the file comment), or null. Perf is one of cuDNN's
// cudnnConvolution*AlgoPerf_t, which share these fields.
template <typename Perf>
const Perf* pick(const std::vector<Perf>& ranking) {
  for (const bool deterministic_only : {true, false}) {
    for (const Perf& perf : ranking) {
      if (perf.status != CUDNN_STATUS_SUCCESS || perf.memory > kWorkspaceLimitBytes) continue;
      if (perf.mathType == CUDNN_TENSOR_OP_MATH || perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
      if (deterministic_only && perf.determinism != CUDNN_DETERMINISTIC) continue;
      return &perf;
    }
  }
  return nullptr;
}

class Convolution final : public CudaLayer {
 public:
  Convolution(std::shared_ptr<Context> context, const LayerSpec& spec, int batch)
      : CudaLayer(std::move(context), spec, batch),
        x_stage_(*context_, in_count()),
        y_stage_(*context_, out_count()),
        dx_stage_(*context_, in_count()),
        dy_stage_(*context_, out_count()) {
    const Shape& in = spec.input;
    const Shape& out = spec.output;
    const std::int64_t groups = spec.groups;
    if (groups < 1 || in.channels % groups != 0 || out.channels % groups != 0 || spec.stride < 1 || spec.kernel_h < 1 ||
        spec.kernel_w < 1 || spec.pad_h < 0 || spec.pad_w < 0) {
      throw InputError("convolution '" + spec.name + "': channels " + std::to_string(in.channels) + " -> " +
                       std::to_string(out.channels) + " do not divide into " + std::to_string(groups) +
                       " groups, or kernel/stride is not positive, or padding is negative");
    }
    const std::int64_t weight_count = out.channels * (in.channels / groups) * spec.kernel_h * spec.kernel_w;
    if (spec.parameters != weight_count && spec.parameters != weight_count + out.channels) {
      throw InputError("convolution '" + spec.name + "': " + std::to_string(spec.parameters) +
                       " parameters, expected " + std::to_string(weight_count) + " weights (+ " +
                       std::to_string(out.channels) + " biases)");
    }
    weight_count_ = static_cast<std::size_t>(weight_count);
    has_bias_ = spec.parameters == weight_count + out.channels;
    const auto expected_size = [&](std::int64_t size, std::int64_t kernel, std::int64_t pad) {
      return size + 2 * pad < kernel ? 0 : (size + 2 * pad - kernel) / spec.stride + 1;
    };
    const std::int64_t expected_h = expected_size(in.height, spec.kernel_h, spec.pad_h);
    const std::int64_t expected_w = expected_size(in.width, spec.kernel_w, spec.pad_w);
    if (out.height != expected_h || out.width != expected_w) {
      throw InputError("convolution '" + spec.name + "': output " + std::to_string(out.height) + "x" +
                       std::to_string(out.width) + " does not follow from input " + std::to_string(in.height) + "x" +
                       std::to_string(in.width) + ", kernel " + std::to_string(spec.kernel_h) + "x" +
                       std::to_string(spec.kernel_w) + ", stride " + std::to_string(spec.stride) + ", padding " +
                       std::to_string(spec.pad_h) + "x" + std::to_string(spec.pad_w) + " (expected " +
                       std::to_string(expected_h) + "x" + std::to_string(expected_w) + ")");
    }

    const Context& ctx = *context_;
    w_stage_ = Staging(ctx, weight_count_);
    dw_stage_ = Staging(ctx, weight_count_);
    set_nchw(x_, batch, in);
    set_nchw(y_, batch, out);
    check_call(cudnnSetFilter4dDescriptor(w_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(out.channels),
                                          static_cast<int>(in.channels / groups), to_int(spec.kernel_h, spec, "kernel"),
                                          to_int(spec.kernel_w, spec, "kernel")),
               "cudnnSetFilter4dDescriptor");
    check_call(cudnnSetConvolution2dDescriptor(conv_.get(), to_int(spec.pad_h, spec, "padding"),
                                               to_int(spec.pad_w, spec, "padding"), to_int(spec.stride, spec, "stride"),
                                               to_int(spec.stride, spec, "stride"), 1, 1, CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT),
               "cudnnSetConvolution2dDescriptor");
    check_call(cudnnSetConvolutionGroupCount(conv_.get(), static_cast<int>(groups)), "cudnnSetConvolutionGroupCount");
    // FP32 FMA only: cuDNN's default math would allow TF32 tensor cores on Ampere and later (10-bit mantissas).
    check_call(cudnnSetConvolutionMathType(conv_.get(), CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    if (has_bias_) {
      set_nchw(bias_, 1, static_cast<int>(out.channels), 1, 1);
      b_stage_ = Staging(ctx, static_cast<std::size_t>(out.channels));
      db_stage_ = Staging(ctx, static_cast<std::size_t>(out.channels));
    }
    int dims[4] = {};
    check_call(
        cudnnGetConvolution2dForwardOutputDim(conv_.get(), x_.get(), w_.get(), &dims[0], &dims[1], &dims[2], &dims[3]),
        "cudnnGetConvolution2dForwardOutputDim");
    DSGD_ENFORCE(dims[0] == batch && dims[1] == out.channels && dims[2] == out.height && dims[3] == out.width,
                 "cuDNN's output shape for convolution '" + spec.name + "' differs from the spec's");

    choose_algorithms();
    // Reserve the largest need now, so that no call of this layer grows (and so synchronises) the workspace.
    context_->workspace(std::max({forward_bytes_, data_bytes_, filter_bytes_}));
  }

  void forward(const float* in, float* out, const float* params, bool /*training*/) override {
    Context& ctx = activated();
    const float* x = x_stage_.in(in);
    const float* w = w_stage_.in(params);
    float* y = y_stage_.out(out);
    check_call(cudnnConvolutionForward(ctx.cudnn(), &kOne, x_.get(), x, w_.get(), w, conv_.get(), forward_algorithm_,
                                       ctx.workspace(forward_bytes_), forward_bytes_, &kZero, y_.get(), y),
               "cudnnConvolutionForward");
    if (has_bias_) {
      const float* b = b_stage_.in(params + weight_count_);
      check_call(cudnnAddTensor(ctx.cudnn(), &kOne, bias_.get(), b, &kOne, y_.get(), y), "cudnnAddTensor (bias)");
    }
    y_stage_.done(out);
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in, const float* params,
                float* grad_params) override {
    Context& ctx = activated();
    const float* dy = dy_stage_.in(grad_out);
    const float* x = x_stage_.in(in);
    float* dw = dw_stage_.out(grad_params);
    check_call(
        cudnnConvolutionBackwardFilter(ctx.cudnn(), &kOne, x_.get(), x, y_.get(), dy, conv_.get(), filter_algorithm_,
                                       ctx.workspace(filter_bytes_), filter_bytes_, &kZero, w_.get(), dw),
        "cudnnConvolutionBackwardFilter");
    dw_stage_.done(grad_params);
    if (has_bias_) {
      float* grad_bias = grad_params + weight_count_;
      float* db = db_stage_.out(grad_bias);
      check_call(cudnnConvolutionBackwardBias(ctx.cudnn(), &kOne, y_.get(), dy, &kZero, bias_.get(), db),
                 "cudnnConvolutionBackwardBias");
      db_stage_.done(grad_bias);
    }
    if (grad_in != nullptr) {
      const float* w = w_stage_.in(params);
      float* dx = dx_stage_.out(grad_in);
      check_call(
          cudnnConvolutionBackwardData(ctx.cudnn(), &kOne, w_.get(), w, y_.get(), dy, conv_.get(), data_algorithm_,
                                       ctx.workspace(data_bytes_), data_bytes_, &kZero, x_.get(), dx),
          "cudnnConvolutionBackwardData");
      dx_stage_.done(grad_in);
    }
  }

 private:
  [[noreturn]] void no_algorithm(const char* pass) const {
    throw Error("cuda back end: cuDNN offers no " + std::string(pass) + " algorithm for convolution '" + spec_.name +
                "' in FP32 within a " + std::to_string(kWorkspaceLimitBytes >> 20) + " MiB workspace");
  }

  void choose_algorithms() {
    cudnnHandle_t handle = context_->cudnn();
    int count = 0;
    int returned = 0;

    check_call(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count),
               "cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> forward(static_cast<std::size_t>(std::max(count, 1)));
    check_call(cudnnGetConvolutionForwardAlgorithm_v7(handle, x_.get(), w_.get(), conv_.get(), y_.get(), count,
                                                      &returned, forward.data()),
               "cudnnGetConvolutionForwardAlgorithm_v7");
    forward.resize(static_cast<std::size_t>(std::clamp(returned, 0, count)));
    const cudnnConvolutionFwdAlgoPerf_t* forward_pick = pick(forward);
    if (forward_pick == nullptr) no_algorithm("forward");
    forward_algorithm_ = forward_pick->algo;
    check_call(cudnnGetConvolutionForwardWorkspaceSize(handle, x_.get(), w_.get(), conv_.get(), y_.get(),
                                                       forward_algorithm_, &forward_bytes_),
               "cudnnGetConvolutionForwardWorkspaceSize");

    check_call(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count),
               "cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> data(static_cast<std::size_t>(std::max(count, 1)));
    check_call(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w_.get(), y_.get(), conv_.get(), x_.get(), count,
                                                           &returned, data.data()),
               "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    data.resize(static_cast<std::size_t>(std::clamp(returned, 0, count)));
    const cudnnConvolutionBwdDataAlgoPerf_t* data_pick = pick(data);
    if (data_pick == nullptr) no_algorithm("backward-data");
    data_algorithm_ = data_pick->algo;
    check_call(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w_.get(), y_.get(), conv_.get(), x_.get(),
                                                            data_algorithm_, &data_bytes_),
               "cudnnGetConvolutionBackwardDataWorkspaceSize");

    check_call(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count),
               "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount");
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> filter(static_cast<std::size_t>(std::max(count, 1)));
    check_call(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x_.get(), y_.get(), conv_.get(), w_.get(), count,
                                                             &returned, filter.data()),
               "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    filter.resize(static_cast<std::size_t>(std::clamp(returned, 0, count)));
    const cudnnConvolutionBwdFilterAlgoPerf_t* filter_pick = pick(filter);
    if (filter_pick == nullptr) no_algorithm("backward-filter");
    filter_algorithm_ = filter_pick->algo;
    check_call(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, x_.get(), y_.get(), conv_.get(), w_.get(),
                                                              filter_algorithm_, &filter_bytes_),
               "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  }

  std::size_t weight_count_ = 0;
  bool has_bias_ = true;
  TensorDescriptor x_, y_, bias_;
  FilterDescriptor w_;
  ConvolutionDescriptor conv_;
  cudnnConvolutionFwdAlgo_t forward_algorithm_{};
  cudnnConvolutionBwdDataAlgo_t data_algorithm_{};
  cudnnConvolutionBwdFilterAlgo_t filter_algorithm_{};
  std::size_t forward_bytes_ = 0;
  std::size_t data_bytes_ = 0;
  std::size_t filter_bytes_ = 0;
  // Aligned copies of misaligned tensors (context.hpp); empty, and free, when every pointer is aligned.
  Staging x_stage_, y_stage_, dx_stage_, dy_stage_;
  Staging w_stage_{*context_, 0}, dw_stage_{*context_, 0}, b_stage_{*context_, 0}, db_stage_{*context_, 0};
};

}  // namespace

std::unique_ptr<Layer> make_convolution(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) {
  return std::make_unique<Convolution>(std::move(context), spec, batch);
}

}  // namespace dsgd::nn::cuda
