// Inner product (fully connected) on cuBLAS SGEMM, weights W as out x in, row-major like the CPU back end:
//   forward   out = in W^T + b        (batch x out)
//   backward  dW  = grad_out^T in     (out x in)
//             dX  = grad_out W        (batch x in)
//             db  = column sums of grad_out
// cuBLAS is column-major, and a row-major r x c matrix is the column-major c x r matrix of its transpose, so each
// product above is computed transposed: out^T = W in^T is gemm(T, N) on (W as in x out) and (in^T as in x batch).
// The bias is a rank-1 update b 1^T (a k = 1 GEMM) and its gradient grad_out^T 1 (a GEMV), against the back end's
// vector of ones.

#include <string>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"

namespace dsgd::nn::cuda {
namespace {

class InnerProduct final : public CudaLayer {
 public:
  InnerProduct(std::shared_ptr<Context> context, const LayerSpec& spec, int batch)
      : CudaLayer(std::move(context), spec, batch) {
    const std::int64_t inputs = spec.input.elements();
    const std::int64_t outputs = spec.output.elements();
    if (spec.output.height != 1 || spec.output.width != 1 || spec.parameters != outputs * inputs + outputs) {
      throw InputError("inner product '" + spec.name + "': expected an output of C x 1 x 1 and " +
                       std::to_string(outputs * inputs + outputs) + " parameters, got " +
                       std::to_string(spec.parameters));
    }
    inputs_ = to_int(inputs, spec, "inputs");
    outputs_ = to_int(outputs, spec, "outputs");
    to_int(outputs * inputs, spec, "weights");
    context_->ones(static_cast<std::size_t>(batch));  // reserve now: no call of this layer then reallocates
  }

  void forward(const float* in, float* out, const float* params, bool /*training*/) override {
    Context& ctx = activated();
    cublasHandle_t handle = ctx.cublas();
    const Cublas& blas = cublas_library();
    // out^T (out x batch) = W (out x in) * in^T (in x batch); W is stored as the column-major in x out matrix W^T.
    check_call(blas.sgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, outputs_, batch_, inputs_, &kOne, params, inputs_, in,
                          inputs_, &kZero, out, outputs_),
               "cublasSgemm (inner product forward)");
    // out^T += b (out x 1) * ones (1 x batch).
    check_call(blas.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, outputs_, batch_, 1, &kOne, bias(params), outputs_,
                          ctx.ones(static_cast<std::size_t>(batch_)), 1, &kOne, out, outputs_),
               "cublasSgemm (inner product bias)");
  }

  void backward(const float* in, const float* /*out*/, const float* grad_out, float* grad_in, const float* params,
                float* grad_params) override {
    Context& ctx = activated();
    cublasHandle_t handle = ctx.cublas();
    const Cublas& blas = cublas_library();
    // dW^T (in x out) = in^T (in x batch) * grad_out (batch x out), grad_out being the column-major out x batch
    // matrix grad_out^T, transposed.
    check_call(blas.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, inputs_, outputs_, batch_, &kOne, in, inputs_, grad_out,
                          outputs_, &kZero, grad_params, inputs_),
               "cublasSgemm (inner product weight gradient)");
    // db (out) = grad_out^T (out x batch) * ones (batch).
    check_call(blas.sgemv(handle, CUBLAS_OP_N, outputs_, batch_, &kOne, grad_out, outputs_,
                          ctx.ones(static_cast<std::size_t>(batch_)), 1, &kZero, bias(grad_params), 1),
               "cublasSgemv (inner product bias gradient)");
    if (grad_in != nullptr) {
      // dX^T (in x batch) = W^T (in x out) * grad_out^T (out x batch).
      check_call(blas.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, inputs_, batch_, outputs_, &kOne, params, inputs_,
                            grad_out, outputs_, &kZero, grad_in, inputs_),
                 "cublasSgemm (inner product input gradient)");
    }
  }

 private:
  template <typename T>
  T* bias(T* params) const {
    return params + static_cast<std::size_t>(inputs_) * static_cast<std::size_t>(outputs_);
  }

  int inputs_ = 0;
  int outputs_ = 0;
};

}  // namespace

std::unique_ptr<Layer> make_inner_product(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) {
  return std::make_unique<InnerProduct>(std::move(context), spec, batch);
}

}  // namespace dsgd::nn::cuda
