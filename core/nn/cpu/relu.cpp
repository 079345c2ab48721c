// ReLU on oneDNN's eltwise primitive; backward reads forward's input (the gradient passes where in > 0).

#include <string>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"

namespace dsgd::nn::cpu {
namespace {

using dnnl::memory;

class Relu final : public CpuLayer {
 public:
  Relu(Context& context, const LayerSpec& spec, int batch) : CpuLayer(context, spec, batch) {
    if (!(spec.input == spec.output) || spec.parameters != 0) {
      throw InputError("relu '" + spec.name + "': output shape differs from input shape, or parameters given");
    }
    ScopedThreads threads(context.threads);
    const dnnl::engine& engine = context.engine;
    const memory::desc data = nchw(batch, spec.input);
    const dnnl::eltwise_forward::primitive_desc forward_pd(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_relu, data, 0.0f}, engine);
    const dnnl::eltwise_backward::primitive_desc backward_pd({dnnl::algorithm::eltwise_relu, data, data, 0.0f},
                                                             engine, forward_pd);
    forward_ = dnnl::eltwise_forward(forward_pd);
    backward_ = dnnl::eltwise_backward(backward_pd);
    src_ = unbound_memory(data, engine);
    dst_ = unbound_memory(data, engine);
    diff_src_ = unbound_memory(data, engine);
    diff_dst_ = unbound_memory(data, engine);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    ScopedThreads threads(context_.threads);
    bind(src_, in);
    bind(dst_, out);
    forward_.execute(context_.stream, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
    context_.stream.wait();
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in,
                const float* /*params*/, float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    ScopedThreads threads(context_.threads);
    bind(src_, in);
    bind(diff_dst_, grad_out);
    bind(diff_src_, grad_in);
    backward_.execute(context_.stream, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DIFF_DST, diff_dst_},
                                        {DNNL_ARG_DIFF_SRC, diff_src_}});
    context_.stream.wait();
  }

 private:
  dnnl::eltwise_forward forward_;
  dnnl::eltwise_backward backward_;
  memory src_, dst_, diff_src_, diff_dst_;
};

}  // namespace

std::unique_ptr<Layer> make_relu(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<Relu>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
