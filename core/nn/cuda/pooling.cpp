// Max and average pooling on cuDNN, with the CPU back end's (and Caffe's) semantics for the zoo's output sizes.
//
// cuDNN pads symmetrically and rounds output sizes down. Caffe's ceil-rounded sizes (model_zoo) need a last
// window that hangs over the bottom/right edge, so such a layer copies its input into a plane with `overhang`
// extra rows and columns (-FLT_MAX for max pooling, never a window's maximum; 0 for average pooling) and crops
// the input gradient back out. Average pooling divides by the window's elements inside the explicitly padded
// input: explicit padding counts, the overhang does not (Caffe; PyTorch's count_include_pad). cuDNN's
// include-padding mode divides every window by kh x kw, so the windows that reach into the overhang are rescaled
// by kh x kw / (their count) after forward, and their output gradient likewise before backward. That also covers
// padding and overhang together, which the CPU back end declines.
//
// Max pooling uses cuDNN's deterministic mode: backward routes each gradient to the window's maximum, found again
// from forward's input and output.

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"
#include "core/nn/cuda/kernels.hpp"

namespace dsgd::nn::cuda {
namespace {

// Rows (or columns) to append after the input so that cuDNN's floor-rounded output, with `pad` on both sides, is
// `out`: 0 for floor rounding, more for a ceil-rounded last window. Throws InputError when `out` follows from no
// rounding, or its last window would start in the right padding (Caffe drops such a window).
std::int64_t overhang(const LayerSpec& spec, std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t pad) {
  const std::int64_t stride = spec.stride;
  const std::int64_t span = in + 2 * pad - kernel;
  if (span >= 0 && span / stride + 1 == out) return 0;
  const std::int64_t extra = (out - 1) * stride + kernel - in - 2 * pad;
  if (out < 1 || extra < 0 || (out - 1) * stride >= in + pad) {
    throw InputError("pooling '" + spec.name + "': output size " + std::to_string(out) +
                     " does not follow from input " + std::to_string(in) + ", kernel " + std::to_string(kernel) +
                     ", stride " + std::to_string(stride) + ", padding " + std::to_string(pad));
  }
  return extra;
}

// Elements of a window starting at `start` (may be negative: inside the left padding) that lie inside the
// explicitly padded input [-pad, in + pad).
std::int64_t counted(std::int64_t start, std::int64_t kernel, std::int64_t in, std::int64_t pad) {
  return std::min(start + kernel, in + pad) - start;
}

class Pooling final : public CudaLayer {
 public:
  Pooling(std::shared_ptr<Context> context, const LayerSpec& spec, int batch)
      : CudaLayer(std::move(context), spec, batch) {
    const Shape& in = spec.input;
    const Shape& out = spec.output;
    if (in.channels != out.channels || spec.stride < 1 || spec.kernel_h < 1 || spec.kernel_w < 1 || spec.pad_h < 0 ||
        spec.pad_w < 0 || spec.parameters != 0) {
      throw InputError("pooling '" + spec.name + "': channels change (" + std::to_string(in.channels) + " -> " +
                       std::to_string(out.channels) +
                       "), kernel/stride not positive, padding negative, or parameters given");
    }
    max_ = spec.kind == LayerKind::kMaxPool;
    const std::int64_t extra_h = overhang(spec, in.height, out.height, spec.kernel_h, spec.pad_h);
    const std::int64_t extra_w = overhang(spec, in.width, out.width, spec.kernel_w, spec.pad_w);
    padded_ = extra_h > 0 || extra_w > 0;
    padded_height_ = to_int(in.height + extra_h, spec, "padded height");
    padded_width_ = to_int(in.width + extra_w, spec, "padded width");
    planes_ = static_cast<std::size_t>(batch) * static_cast<std::size_t>(in.channels);
    to_int(static_cast<std::int64_t>(planes_) * padded_height_ * padded_width_, spec,
           "a batch of padded input elements");

    const int channels = static_cast<int>(in.channels);
    set_nchw(x_, batch, channels, padded_height_, padded_width_);
    set_nchw(y_, batch, out);
    check_call(cudnnSetPooling2dDescriptor(
                   pool_.get(), max_ ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                   CUDNN_PROPAGATE_NAN, to_int(spec.kernel_h, spec, "kernel"), to_int(spec.kernel_w, spec, "kernel"),
                   to_int(spec.pad_h, spec, "padding"), to_int(spec.pad_w, spec, "padding"),
                   to_int(spec.stride, spec, "stride"), to_int(spec.stride, spec, "stride")),
               "cudnnSetPooling2dDescriptor");
    int dims[4] = {};
    check_call(cudnnGetPooling2dForwardOutputDim(pool_.get(), x_.get(), &dims[0], &dims[1], &dims[2], &dims[3]),
               "cudnnGetPooling2dForwardOutputDim");
    DSGD_ENFORCE(dims[0] == batch && dims[1] == out.channels && dims[2] == out.height && dims[3] == out.width,
                 "cuDNN's output shape for pooling '" + spec.name + "' differs from the spec's");

    const Context& ctx = *context_;
    if (padded_) {
      const std::size_t padded_count = planes_ * static_cast<std::size_t>(padded_height_) * padded_width_;
      padded_x_ = DeviceBuffer(ctx, padded_count);
      padded_dx_ = DeviceBuffer(ctx, padded_count);
    }
    if (!max_ && padded_) rescale_overhang(ctx);
  }

  void forward(const float* in, float* out, const float* /*params*/, bool /*training*/) override {
    Context& ctx = activated();
    const float* x = padded_ ? pad(in) : in;
    check_call(cudnnPoolingForward(ctx.cudnn(), pool_.get(), &kOne, x_.get(), x, &kZero, y_.get(), out),
               "cudnnPoolingForward");
    if (factors_) {
      check_call(launch_scale_planes(out, out, factors_.get(), planes_, plane_size_out(), ctx.stream()),
                 "scale_planes kernel");
    }
  }

  void backward(const float* in, const float* out, const float* grad_out, float* grad_in, const float* /*params*/,
                float* /*grad_params*/) override {
    if (grad_in == nullptr) return;
    Context& ctx = activated();
    // Forward's padded input again: the same values, so max pooling finds the same arg-max.
    const float* x = padded_ ? pad(in) : in;
    float* dx = padded_ ? padded_dx_.get() : grad_in;
    const float* dy = grad_out;
    if (factors_) {
      check_call(
          launch_scale_planes(grad_out, scaled_dy_.get(), factors_.get(), planes_, plane_size_out(), ctx.stream()),
          "scale_planes kernel");
      dy = scaled_dy_.get();
    }
    check_call(cudnnPoolingBackward(ctx.cudnn(), pool_.get(), &kOne, y_.get(), out, y_.get(), dy, x_.get(), x, &kZero,
                                    x_.get(), dx),
               "cudnnPoolingBackward");
    if (padded_) {
      check_call(
          launch_crop_planes(padded_dx_.get(), grad_in, planes_, padded_height_, padded_width_,
                             static_cast<int>(spec_.input.height), static_cast<int>(spec_.input.width), ctx.stream()),
          "crop_planes kernel");
    }
  }

 private:
  std::size_t plane_size_out() const {
    return static_cast<std::size_t>(spec_.output.height) * static_cast<std::size_t>(spec_.output.width);
  }

  // Copies `in` into padded_x_ with the overhang filled so that it never changes the result.
  const float* pad(const float* in) {
    const float fill = max_ ? std::numeric_limits<float>::lowest() : 0.0f;
    check_call(
        launch_pad_planes(in, padded_x_.get(), planes_, static_cast<int>(spec_.input.height),
                          static_cast<int>(spec_.input.width), padded_height_, padded_width_, fill, context_->stream()),
        "pad_planes kernel");
    return padded_x_.get();
  }

  // Average pooling with an overhang: per output position, kh x kw / (elements counted), uploaded once.
  void rescale_overhang(const Context& ctx) {
    const Shape& in = spec_.input;
    const Shape& out = spec_.output;
    std::vector<float> factors(plane_size_out());
    bool any = false;
    for (std::int64_t oy = 0; oy < out.height; ++oy) {
      const std::int64_t rows = counted(oy * spec_.stride - spec_.pad_h, spec_.kernel_h, in.height, spec_.pad_h);
      for (std::int64_t ox = 0; ox < out.width; ++ox) {
        const std::int64_t cols = counted(ox * spec_.stride - spec_.pad_w, spec_.kernel_w, in.width, spec_.pad_w);
        const double factor = static_cast<double>(spec_.kernel_h * spec_.kernel_w) / static_cast<double>(rows * cols);
        factors[static_cast<std::size_t>(oy * out.width + ox)] = static_cast<float>(factor);
        any = any || factor != 1.0;
      }
    }
    if (!any) return;
    factors_ = DeviceBuffer(ctx, factors.size());
    check_call(cudaMemcpyAsync(factors_.get(), factors.data(), factors.size() * sizeof(float), cudaMemcpyHostToDevice,
                               ctx.stream()),
               "cudaMemcpyAsync (pooling factors)");
    ctx.synchronize();  // `factors` is about to go
    scaled_dy_ = DeviceBuffer(ctx, out_count());
  }

  bool max_ = true;
  bool padded_ = false;  // whether the input is copied into a plane with an overhang
  int padded_height_ = 0;
  int padded_width_ = 0;
  std::size_t planes_ = 0;  // batch x channels
  TensorDescriptor x_, y_;
  PoolingDescriptor pool_;
  DeviceBuffer padded_x_, padded_dx_;
  DeviceBuffer factors_;    // average pooling over an overhang: per-position rescaling, else empty
  DeviceBuffer scaled_dy_;  // grad_out rescaled by factors_
};

}  // namespace

std::unique_ptr<Layer> make_pooling(std::shared_ptr<Context> context, const LayerSpec& spec, int batch) {
  return std::make_unique<Pooling>(std::move(context), spec, batch);
}

}  // namespace dsgd::nn::cuda
