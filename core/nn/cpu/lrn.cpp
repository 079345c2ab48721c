// Local response normalisation across channels on oneDNN, with Caffe's AlexNet parameters:
//   out = in / (k + alpha / n * sum over n neighbouring channels of in^2)^beta, n = 5, alpha = 1e-4, beta = 0.75,
//   k = 1.
// oneDNN divides alpha by the window size as Caffe does, so the numbers carry over unchanged.
// Both directions run on the channel-blocked layout (nChw16c) with reorders around them: oneDNN 2.6 has only a
// reference backward for NCHW, 25x slower on CIFAR AlexNet's norm1 (157 ms vs 6.7 ms at batch 64, reorders
// included), and the backward needs the workspace of a forward in its own layout.

#include <string>
#include <unordered_map>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"

namespace dsgd::nn::cpu {
namespace {

using dnnl::memory;

constexpr memory::dim kLocalSize = 5;
constexpr float kAlpha = 1e-4f;
constexpr float kBeta = 0.75f;
constexpr float kK = 1.0f;

class Lrn final : public CpuLayer {
 public:
  Lrn(Context& context, const LayerSpec& spec, int batch) : CpuLayer(context, spec, batch) {
    check_shape_preserving("local response norm", spec);
    ScopedThreads threads(context.threads);
    const dnnl::engine& engine = context.engine;
    const memory::desc plain = nchw(batch, spec.input);
    const memory::desc data(plain.dims(), memory::data_type::f32, memory::format_tag::nChw16c);
    const auto algorithm = dnnl::algorithm::lrn_across_channels;
    const dnnl::lrn_forward::primitive_desc forward_pd(
        {dnnl::prop_kind::forward_training, algorithm, data, kLocalSize, kAlpha, kBeta, kK}, own_scratchpad(), engine);
    const dnnl::lrn_backward::primitive_desc backward_pd({algorithm, data, data, kLocalSize, kAlpha, kBeta, kK},
                                                         own_scratchpad(), engine, forward_pd);
    forward_ = Primitive(forward_pd, engine);
    backward_ = Primitive(backward_pd, engine);
    src_ = Staged(plain, data, Staged::Direction::kIn, engine);
    dst_ = Staged(plain, data, Staged::Direction::kOut, engine);
    diff_src_ = Staged(plain, data, Staged::Direction::kOut, engine);
    diff_dst_ = Staged(plain, data, Staged::Direction::kIn, engine);
    // Forward's intermediate sums for backward; oneDNN may need none (then backward recomputes them).
    if (forward_pd.workspace_desc().get_size() > 0) workspace_ = memory(forward_pd.workspace_desc(), engine);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    ScopedThreads threads(context_.threads);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src_.in(context_.stream, in)},
                                            {DNNL_ARG_DST, dst_.out(out)}};
    if (workspace_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
    forward_.execute(context_.stream, args);
    dst_.out_done(context_.stream);
    context_.stream.wait();
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in, const float* /*params*/,
                float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    ScopedThreads threads(context_.threads);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src_.in(context_.stream, in)},
                                            {DNNL_ARG_DIFF_DST, diff_dst_.in(context_.stream, grad_out)},
                                            {DNNL_ARG_DIFF_SRC, diff_src_.out(grad_in)}};
    if (workspace_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
    backward_.execute(context_.stream, args);
    diff_src_.out_done(context_.stream);
    context_.stream.wait();
  }

 private:
  Primitive forward_;
  Primitive backward_;
  Staged src_, dst_, diff_src_, diff_dst_;
  memory workspace_;
};

}  // namespace

std::unique_ptr<Layer> make_lrn(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<Lrn>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
