// ReLU on oneDNN's eltwise primitive, NaN passed through as IEEE says (nan_propagation.hpp); backward reads
// forward's input (the gradient passes where in > 0).

#include <string>

#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"
#include "core/nn/cpu/nan_propagation.hpp"

namespace dsgd::nn::cpu {
namespace {

using dnnl::memory;

class Relu final : public CpuLayer {
 public:
  Relu(Context& context, const LayerSpec& spec, int batch) : CpuLayer(context, spec, batch) {
    check_shape_preserving("relu", spec);
    ScopedThreads threads(context.threads);
    const dnnl::engine& engine = context.engine;
    const memory::desc data = nchw(batch, spec.input);
    const dnnl::eltwise_forward::primitive_desc forward_pd(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_relu, data, 0.0f}, own_scratchpad(), engine);
    const dnnl::eltwise_backward::primitive_desc backward_pd({dnnl::algorithm::eltwise_relu, data, data, 0.0f},
                                                             own_scratchpad(), engine, forward_pd);
    forward_ = Primitive(forward_pd, engine);
    backward_ = Primitive(backward_pd, engine);
    io_ = DataMemory(data, data, engine);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    ScopedThreads threads(context_.threads);
    bind(io_.src, in);
    bind(io_.dst, out);
    run(forward_, {{DNNL_ARG_SRC, io_.src}, {DNNL_ARG_DST, io_.dst}});
    propagate_nan_elementwise(in, out, static_cast<std::size_t>(in_elements()));
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in, const float* /*params*/,
                float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    ScopedThreads threads(context_.threads);
    bind(io_.src, in);
    bind(io_.diff_dst, grad_out);
    bind(io_.diff_src, grad_in);
    run(backward_, {{DNNL_ARG_SRC, io_.src}, {DNNL_ARG_DIFF_DST, io_.diff_dst}, {DNNL_ARG_DIFF_SRC, io_.diff_src}});
  }

 private:
  Primitive forward_;
  Primitive backward_;
  DataMemory io_;
};

}  // namespace

std::unique_ptr<Layer> make_relu(Context& context, const LayerSpec& spec, int batch) {
  return std::make_unique<Relu>(context, spec, batch);
}

}  // namespace dsgd::nn::cpu
