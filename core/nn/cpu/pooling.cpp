// Max and average pooling on oneDNN, on the layer API's NCHW tensors directly (oneDNN has a vectorised NCHW
// pooling; a reorder to a blocked layout would cost as much as the pooling itself). Max pooling passes NaN through
// as IEEE says (nan_propagation.hpp).
//
// Caffe's ceil-rounded output sizes (model_zoo) become extra right padding. Average pooling divides by the
// window's elements inside the explicitly padded input -- explicit padding counts, the ceil-mode overhang does
// not (Caffe, and PyTorch's count_include_pad) -- which is oneDNN's exclude-padding mode when there is no explicit
// padding and its include-padding mode when there is no overhang; the zoo has no layer with both.

#include <string>
#include <unordered_map>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"
#include "core/nn/cpu/nan_propagation.hpp"

namespace dsgd::nn::cpu {
namespace {

using dnnl::memory;

class Pooling final : public CpuLayer {
 public:
  Pooling(Context& context, const LayerSpec& spec, int batch) : CpuLayer(context, spec, batch) {
    const Shape& in = spec.input;
    const Shape& out = spec.output;
    if (in.channels != out.channels || spec.stride < 1 || spec.kernel_h < 1 || spec.kernel_w < 1 ||
        spec.parameters != 0) {
      throw InputError("pooling '" + spec.name + "': channels change (" + std::to_string(in.channels) + " -> " +
                       std::to_string(out.channels) + "), kernel/stride not positive, or parameters given");
    }
    const memory::dims strides = {spec.stride, spec.stride};
    const memory::dims kernel = {spec.kernel_h, spec.kernel_w};
    const memory::dims pad_l = {spec.pad_h, spec.pad_w};
    const memory::dims pad_r = {right_padding(spec, in.height, out.height, spec.kernel_h, spec.pad_h),
                                right_padding(spec, in.width, out.width, spec.kernel_w, spec.pad_w)};
    const bool overhang = pad_r[0] > pad_l[0] || pad_r[1] > pad_l[1];
    const bool padded = spec.pad_h > 0 || spec.pad_w > 0;
    dnnl::algorithm algorithm = dnnl::algorithm::pooling_max;
    if (spec.kind == LayerKind::kAveragePool) {
      if (padded && overhang) {
        throw UnavailableError("average pooling '" + spec.name +
                               "' has both explicit padding and a ceil-mode overhang, which oneDNN cannot count "
                               "as Caffe does");
      }
      algorithm = padded ? dnnl::algorithm::pooling_avg_include_padding : dnnl::algorithm::pooling_avg_exclude_padding;
    }
    max_ = spec.kind == LayerKind::kMaxPool;

    ScopedThreads threads(context.threads);
    const dnnl::engine& engine = context.engine;
    const memory::desc src = nchw(batch, in);
    const memory::desc dst = nchw(batch, out);
    const dnnl::pooling_forward::primitive_desc forward_pd(
        {dnnl::prop_kind::forward_training, algorithm, src, dst, strides, kernel, pad_l, pad_r}, own_scratchpad(),
        engine);
    const dnnl::pooling_backward::primitive_desc backward_pd({algorithm, src, dst, strides, kernel, pad_l, pad_r},
                                                             own_scratchpad(), engine, forward_pd);
    forward_ = Primitive(forward_pd, engine);
    backward_ = Primitive(backward_pd, engine);
    io_ = DataMemory(src, dst, engine);
    // Max pooling's arg-max, written by forward for backward; empty for average pooling.
    if (max_) workspace_ = memory(forward_pd.workspace_desc(), engine);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    ScopedThreads threads(context_.threads);
    bind(io_.src, in);
    bind(io_.dst, out);
    run_with_workspace(forward_, {{DNNL_ARG_SRC, io_.src}, {DNNL_ARG_DST, io_.dst}});
    if (max_) propagate_nan_max_pool(in, out, batch_, spec_);
  }

  void backward(const float* /*in*/, const float* /*out*/, const float* grad_out, float* grad_in,
                const float* /*params*/, float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    ScopedThreads threads(context_.threads);
    bind(io_.diff_dst, grad_out);
    bind(io_.diff_src, grad_in);
    run_with_workspace(backward_, {{DNNL_ARG_DIFF_DST, io_.diff_dst}, {DNNL_ARG_DIFF_SRC, io_.diff_src}});
  }

 private:
  // Max pooling's forward writes the arg-max that its backward reads.
  void run_with_workspace(const Primitive& primitive, std::unordered_map<int, memory> args) {
    if (max_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
    run(primitive, args);
  }

  bool max_ = true;
  Primitive forward_;
  Primitive backward_;
  DataMemory io_;
  memory workspace_;
};

}  // namespace

std::unique_ptr<Layer> make_pooling(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<Pooling>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
