// Convolution on oneDNN: forward, backward data and backward weights (with bias) primitives, created once.
// Where channel counts suit AVX-512 the primitives pick their own layouts (format_tag::any: channel-blocked
// nChw16c) and Staged reorders between them and the layer API's NCHW / OIHW tensors; on this Zen 4 that runs the
// CIFAR AlexNet's convolutions about twice as fast as plain layouts, reorders included. Blocking pads channels
// to multiples of 16, so layers like LeNet's (20 and 50 channels: 1.6-2x padded work) stay on plain layouts,
// where oneDNN uses im2col + its own GEMM and LeNet trains faster.

#include <string>
#include <unordered_map>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"

namespace dsgd::nn::cpu {
namespace {

using dnnl::memory;
using Direction = Staged::Direction;

memory::desc any_layout(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

constexpr std::int64_t kMaxImageChannels = 4;

// Work a 16-channel-blocked layout adds by padding channels (per group), 1 when none. Inputs of up to 4 channels
// (images) are read unblocked by oneDNN's first-layer kernels and cost nothing.
double blocking_overhead(std::int64_t in_channels, std::int64_t out_channels) {
  auto padded = [](std::int64_t channels) {
    const std::int64_t blocks = (channels + 15) / 16;
    return static_cast<double>(blocks * 16) / static_cast<double>(channels);
  };
  return padded(out_channels) * (in_channels <= kMaxImageChannels ? 1.0 : padded(in_channels));
}

constexpr double kMaxBlockingOverhead = 1.25;

class Convolution final : public CpuLayer {
 public:
  Convolution(Context& context, const LayerSpec& spec, int batch) : CpuLayer(context, spec, batch) {
    const Shape& in = spec.input;
    const Shape& out = spec.output;
    const std::int64_t groups = spec.groups;
    if (groups < 1 || in.channels % groups != 0 || out.channels % groups != 0 || spec.stride < 1 || spec.kernel_h < 1 ||
        spec.kernel_w < 1) {
      throw InputError("convolution '" + spec.name + "': channels " + std::to_string(in.channels) + " -> " +
                       std::to_string(out.channels) + " do not divide into " + std::to_string(groups) +
                       " groups, or kernel/stride is not positive");
    }
    weight_count_ = out.channels * (in.channels / groups) * spec.kernel_h * spec.kernel_w;
    if (spec.parameters != weight_count_ && spec.parameters != weight_count_ + out.channels) {
      throw InputError("convolution '" + spec.name + "': " + std::to_string(spec.parameters) +
                       " parameters, expected " + std::to_string(weight_count_) + " weights (+ " +
                       std::to_string(out.channels) + " biases)");
    }
    has_bias_ = spec.parameters == weight_count_ + out.channels;

    const memory::dims strides = {spec.stride, spec.stride};
    const memory::dims pad_l = {spec.pad_h, spec.pad_w};
    const memory::dims pad_r = {right_padding(spec, in.height, out.height, spec.kernel_h, spec.pad_h),
                                right_padding(spec, in.width, out.width, spec.kernel_w, spec.pad_w)};
    // Weights as the packed buffer holds them: OIHW, or GOIHW with the group outermost (the same bytes).
    const memory::dims weight_dims =
        groups == 1 ? memory::dims{out.channels, in.channels, spec.kernel_h, spec.kernel_w}
                    : memory::dims{groups, out.channels / groups, in.channels / groups, spec.kernel_h, spec.kernel_w};
    const memory::desc weights_plain(weight_dims, memory::data_type::f32,
                                     groups == 1 ? memory::format_tag::oihw : memory::format_tag::goihw);
    const memory::desc bias_md =
        has_bias_ ? memory::desc({out.channels}, memory::data_type::f32, memory::format_tag::x) : memory::desc();
    const memory::desc src_plain = nchw(batch, in);
    const memory::desc dst_plain = nchw(batch, out);
    const bool blocked = blocking_overhead(in.channels / groups, out.channels / groups) <= kMaxBlockingOverhead;
    const memory::desc src_any = blocked ? any_layout(src_plain.dims()) : src_plain;
    const memory::desc dst_any = blocked ? any_layout(dst_plain.dims()) : dst_plain;
    const memory::desc weights_any = blocked ? any_layout(weight_dims) : weights_plain;
    // The weights gradient of an image-input layer (LeNet's conv1: 1 -> 20 channels) runs 4-5x faster on the
    // blocked kernels than on im2col + GEMM, padding notwithstanding (measured on this Zen 4).
    const bool blocked_weights = blocked || in.channels <= kMaxImageChannels;

    ScopedThreads threads(context.threads);  // some kernels size their work split by the thread count
    const dnnl::engine& engine = context.engine;
    const auto algorithm = dnnl::algorithm::convolution_direct;
    const auto training = dnnl::prop_kind::forward_training;
    const dnnl::convolution_forward::primitive_desc forward_pd(
        {training, algorithm, src_any, weights_any, bias_md, dst_any, strides, pad_l, pad_r}, own_scratchpad(), engine);
    const dnnl::convolution_backward_data::primitive_desc data_pd(
        {algorithm, src_any, weights_any, dst_any, strides, pad_l, pad_r}, own_scratchpad(), engine, forward_pd);
    const memory::desc src_w = blocked_weights ? any_layout(src_plain.dims()) : src_plain;
    const memory::desc dst_w = blocked_weights ? any_layout(dst_plain.dims()) : dst_plain;
    const memory::desc weights_w = blocked_weights ? any_layout(weight_dims) : weights_plain;
    // A backward primitive takes a forward one of the same layouts as its hint.
    const dnnl::convolution_forward::primitive_desc weights_hint(
        {training, algorithm, src_w, weights_w, bias_md, dst_w, strides, pad_l, pad_r}, own_scratchpad(), engine);
    const dnnl::convolution_backward_weights::primitive_desc weights_pd(
        {algorithm, src_w, weights_w, bias_md, dst_w, strides, pad_l, pad_r}, own_scratchpad(), engine, weights_hint);
    forward_ = Primitive(forward_pd, engine);
    backward_data_ = Primitive(data_pd, engine);
    backward_weights_ = Primitive(weights_pd, engine);

    forward_src_ = Staged(src_plain, forward_pd.src_desc(), Direction::kIn, engine);
    forward_weights_ = Staged(weights_plain, forward_pd.weights_desc(), Direction::kIn, engine);
    forward_dst_ = Staged(dst_plain, forward_pd.dst_desc(), Direction::kOut, engine);
    data_diff_dst_ = Staged(dst_plain, data_pd.diff_dst_desc(), Direction::kIn, engine);
    data_weights_ = Staged(weights_plain, data_pd.weights_desc(), Direction::kIn, engine);
    data_diff_src_ = Staged(src_plain, data_pd.diff_src_desc(), Direction::kOut, engine);
    weights_src_ = Staged(src_plain, weights_pd.src_desc(), Direction::kIn, engine);
    weights_diff_dst_ = Staged(dst_plain, weights_pd.diff_dst_desc(), Direction::kIn, engine);
    weights_diff_weights_ = Staged(weights_plain, weights_pd.diff_weights_desc(), Direction::kOut, engine);
    if (has_bias_) {
      bias_ = unbound_memory(bias_md, engine);
      diff_bias_ = unbound_memory(bias_md, engine);
    }
  }

  void forward(const float* in, float* out, const float* params, bool /*training*/) override {
    ScopedThreads threads(context_.threads);
    dnnl::stream& stream = context_.stream;
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, forward_src_.in(stream, in)},
                                            {DNNL_ARG_WEIGHTS, forward_weights_.in(stream, params)},
                                            {DNNL_ARG_DST, forward_dst_.out(out)}};
    if (has_bias_) {
      bind(bias_, params + weight_count_);
      args.emplace(DNNL_ARG_BIAS, bias_);
    }
    forward_.execute(stream, args);
    forward_dst_.out_done(stream);
    stream.wait();
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in, const float* params,
                float* grad_params) override {
    ScopedThreads threads(context_.threads);
    dnnl::stream& stream = context_.stream;
    if (grad_in != nullptr) {
      backward_data_.execute(stream, {{DNNL_ARG_DIFF_DST, data_diff_dst_.in(stream, grad_out)},
                                      {DNNL_ARG_WEIGHTS, data_weights_.in(stream, params)},
                                      {DNNL_ARG_DIFF_SRC, data_diff_src_.out(grad_in)}});
      data_diff_src_.out_done(stream);
    }
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, weights_src_.in(stream, in)},
                                            {DNNL_ARG_DIFF_DST, weights_diff_dst_.in(stream, grad_out)},
                                            {DNNL_ARG_DIFF_WEIGHTS, weights_diff_weights_.out(grad_params)}};
    if (has_bias_) {
      bind(diff_bias_, grad_params + weight_count_);
      args.emplace(DNNL_ARG_DIFF_BIAS, diff_bias_);
    }
    backward_weights_.execute(stream, args);
    weights_diff_weights_.out_done(stream);
    stream.wait();
  }

 private:
  std::int64_t weight_count_ = 0;
  bool has_bias_ = true;
  Primitive forward_;
  Primitive backward_data_;
  Primitive backward_weights_;
  Staged forward_src_, forward_weights_, forward_dst_;
  Staged data_diff_dst_, data_weights_, data_diff_src_;
  Staged weights_src_, weights_diff_dst_, weights_diff_weights_;
  memory bias_, diff_bias_;
};

}  // namespace

std::unique_ptr<Layer> make_convolution(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<Convolution>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
