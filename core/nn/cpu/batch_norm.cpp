// Batch normalisation on oneDNN with a trained scale and shift per channel (the packed slice holds scale then
// shift, oneDNN's scale-shift layout). Training normalises with the batch's mean and variance and folds them
// into running statistics (momentum 0.1, unbiased variance, as PyTorch); evaluation uses the running statistics.
// The running statistics are state of the layer, not parameters: they are neither packed nor sent.

#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"

namespace dsgd::nn::cpu {
namespace {

using dnnl::memory;

constexpr float kEpsilon = 1e-5f;
constexpr float kMomentum = 0.1f;

class BatchNorm final : public CpuLayer {
 public:
  BatchNorm(Context& context, const LayerSpec& spec, int batch) : CpuLayer(context, spec, batch) {
    const std::int64_t channels = spec.input.channels;
    if (!(spec.input == spec.output) || spec.parameters != 2 * channels) {
      throw InputError("batch norm '" + spec.name + "': output shape differs from input shape, or parameters are not " +
                       std::to_string(2 * channels) + " (scale and shift per channel)");
    }
    ScopedThreads threads(context.threads);
    const dnnl::engine& engine = context.engine;
    const memory::desc data = nchw(batch, spec.input);
    const auto flags = dnnl::normalization_flags::use_scale_shift;
    const dnnl::batch_normalization_forward::primitive_desc training_pd(
        {dnnl::prop_kind::forward_training, data, kEpsilon, flags}, own_scratchpad(), engine);
    const dnnl::batch_normalization_forward::primitive_desc inference_pd(
        {dnnl::prop_kind::forward_inference, data, kEpsilon, flags | dnnl::normalization_flags::use_global_stats},
        own_scratchpad(), engine);
    const dnnl::batch_normalization_backward::primitive_desc backward_pd(
        {dnnl::prop_kind::backward, data, data, kEpsilon, flags}, own_scratchpad(), engine, training_pd);
    training_ = Primitive(training_pd, engine);
    inference_ = Primitive(inference_pd, engine);
    backward_ = Primitive(backward_pd, engine);
    io_ = DataMemory(data, data, engine);
    scale_shift_ = unbound_memory(training_pd.weights_desc(), engine);
    diff_scale_shift_ = unbound_memory(backward_pd.diff_weights_desc(), engine);
    mean_ = memory(training_pd.mean_desc(), engine);
    variance_ = memory(training_pd.variance_desc(), engine);
    running_mean_.assign(static_cast<std::size_t>(channels), 0.0f);
    running_variance_.assign(static_cast<std::size_t>(channels), 1.0f);
    running_mean_memory_ = unbound_memory(training_pd.mean_desc(), engine);
    running_variance_memory_ = unbound_memory(training_pd.variance_desc(), engine);
    bind(running_mean_memory_, running_mean_.data());
    bind(running_variance_memory_, running_variance_.data());
  }

  void forward(const float* in, float* out, const float* params, bool training) override {
    ScopedThreads threads(context_.threads);
    bind(io_.src, in);
    bind(io_.dst, out);
    bind(scale_shift_, params);
    // Training writes the batch's statistics into mean_ and variance_; evaluation reads the running ones.
    run(training ? training_ : inference_, {{DNNL_ARG_SRC, io_.src},
                                            {DNNL_ARG_DST, io_.dst},
                                            {DNNL_ARG_SCALE_SHIFT, scale_shift_},
                                            {DNNL_ARG_MEAN, training ? mean_ : running_mean_memory_},
                                            {DNNL_ARG_VARIANCE, training ? variance_ : running_variance_memory_}});
    if (!training) return;
    const auto* mean = static_cast<const float*>(mean_.get_data_handle());
    const auto* variance = static_cast<const float*>(variance_.get_data_handle());
    const double per_channel =
        static_cast<double>(batch_) * static_cast<double>(spec_.input.height * spec_.input.width);
    const auto unbias = static_cast<float>(per_channel > 1 ? per_channel / (per_channel - 1) : 1.0);
    for (std::size_t c = 0; c < running_mean_.size(); ++c) {
      running_mean_[c] = (1 - kMomentum) * running_mean_[c] + kMomentum * mean[c];
      running_variance_[c] = (1 - kMomentum) * running_variance_[c] + kMomentum * variance[c] * unbias;
    }
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in, const float* params,
                float* grad_params) override {
    ScopedThreads threads(context_.threads);
    bind(io_.src, in);
    bind(io_.diff_dst, grad_out);
    bind(scale_shift_, params);
    bind(diff_scale_shift_, grad_params);
    // oneDNN always writes the input gradient; the first layer of a network gets a scratch buffer.
    if (grad_in != nullptr) {
      bind(io_.diff_src, grad_in);
    } else if (!scratch_diff_src_) {
      scratch_diff_src_ = memory(io_.src.get_desc(), context_.engine);
    }
    run(backward_, {{DNNL_ARG_SRC, io_.src},
                    {DNNL_ARG_MEAN, mean_},
                    {DNNL_ARG_VARIANCE, variance_},
                    {DNNL_ARG_DIFF_DST, io_.diff_dst},
                    {DNNL_ARG_SCALE_SHIFT, scale_shift_},
                    {DNNL_ARG_DIFF_SRC, grad_in != nullptr ? io_.diff_src : scratch_diff_src_},
                    {DNNL_ARG_DIFF_SCALE_SHIFT, diff_scale_shift_}});
  }

 private:
  Primitive training_;
  Primitive inference_;
  Primitive backward_;
  DataMemory io_;
  memory scale_shift_, diff_scale_shift_;
  memory mean_, variance_;  // the last training batch's statistics, for backward
  memory scratch_diff_src_;
  std::vector<float> running_mean_, running_variance_;
  memory running_mean_memory_, running_variance_memory_;
};

}  // namespace

std::unique_ptr<Layer> make_batch_norm(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<BatchNorm>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
