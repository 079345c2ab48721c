#include "core/layer_kernels.hpp"

#include <string>
#include <utility>

#include "core/error.hpp"

namespace dsgd {

namespace {

constexpr double kBytesPerFloat = 4;

bool gemm_like(LayerKind kind) { return kind == LayerKind::kConvolution || kind == LayerKind::kInnerProduct; }

// Elements a streaming layer reads per image: a concat's inputs together are its output; an add reads each input.
double input_elements(const LayerSpec& layer) {
  if (layer.kind == LayerKind::kConcat) return static_cast<double>(layer.output.elements());
  if (layer.kind == LayerKind::kEltwiseAdd) {
    return static_cast<double>(layer.output.elements()) * static_cast<double>(layer.inputs.size());
  }
  return static_cast<double>(layer.input.elements());
}

// The three GEMMs of a convolution (implicit GEMM per group: im2col's columns for the forward and the weights'
// gradient, col2im's for the input's gradient) or of an inner product, each with the forward's multiply-adds.
struct GemmPasses {
  GemmShape forward, backward_data, backward_weights;
};

GemmPasses gemm_passes(const LayerSpec& layer, std::int64_t batch) {
  if (layer.kind == LayerKind::kInnerProduct) {
    const std::int64_t in = layer.input.elements();
    const std::int64_t out = layer.output.elements();
    return {{batch, out, in}, {batch, in, out}, {out, in, batch}};
  }
  const std::int64_t groups = layer.groups;
  const std::int64_t pixels = batch * layer.output.height * layer.output.width;
  const std::int64_t out_channels = layer.output.channels / groups;
  const std::int64_t patch = layer.input.channels / groups * layer.kernel_h * layer.kernel_w;
  return {{pixels, out_channels, patch, groups},
          {patch, pixels, out_channels, groups},
          {out_channels, patch, pixels, groups}};
}

// A 3x3 convolution of stride 1 as Winograd, pass by pass, or none.
std::optional<Winograd3x3> winograd_of(const LayerSpec& layer, std::int64_t batch, KernelPass pass) {
  if (layer.kind != LayerKind::kConvolution || layer.kernel_h != 3 || layer.kernel_w != 3 || layer.stride != 1) {
    return std::nullopt;
  }
  const std::int64_t groups = layer.groups;
  const std::int64_t in = layer.input.channels / groups;
  const std::int64_t out = layer.output.channels / groups;
  const Shape& grid = pass == KernelPass::kBackwardData ? layer.input : layer.output;
  // The input's gradient is a convolution of the output's gradient: its channels run the other way.
  const bool reversed = pass == KernelPass::kBackwardData;
  return Winograd3x3{pass, batch, grid.height, grid.width, reversed ? out : in, reversed ? in : out, groups};
}

// The column matrix im2col would build for `layer`, or 0 where its input already is one.
std::int64_t lowered_elements(const LayerSpec& layer, std::int64_t batch) {
  if (layer.kind != LayerKind::kConvolution) return 0;
  const bool pointwise =
      layer.kernel_h == 1 && layer.kernel_w == 1 && layer.stride == 1 && layer.pad_h == 0 && layer.pad_w == 0;
  if (pointwise) return 0;
  const std::int64_t patch = layer.input.channels * layer.kernel_h * layer.kernel_w;  // over every group
  return patch * batch * layer.output.height * layer.output.width;
}

}  // namespace

GemmShape Winograd3x3::gemm(std::int64_t output_tile) const {
  const std::int64_t tiles =
      batch * ((height + output_tile - 1) / output_tile) * ((width + output_tile - 1) / output_tile);
  const std::int64_t count = (output_tile + 2) * (output_tile + 2) * groups;
  if (pass == KernelPass::kBackwardWeights) return {channels_out, channels_in, tiles, count};
  return {tiles, channels_out, channels_in, count};
}

std::string_view to_string(KernelPass pass) {
  switch (pass) {
    case KernelPass::kForward:
      return "forward";
    case KernelPass::kBackwardData:
      return "backward-data";
    case KernelPass::kBackwardWeights:
      return "backward-weights";
  }
  return "?";
}

std::vector<LayerKernel> layer_kernels(const ModelSpec& model, std::size_t layer_index, std::int64_t batch) {
  if (batch < 1) throw InputError("layer kernels: batch " + std::to_string(batch) + " is not >= 1");
  if (layer_index >= model.layers.size()) {
    throw InputError("layer kernels: " + model.name + " has " + std::to_string(model.layers.size()) +
                     " layers, no layer " + std::to_string(layer_index));
  }
  const LayerSpec& layer = model.layers[layer_index];
  const double images = static_cast<double>(batch);
  const double in = images * input_elements(layer) * kBytesPerFloat;
  const double out = images * static_cast<double>(layer.output.elements()) * kBytesPerFloat;
  const double weights = static_cast<double>(layer.parameters) * kBytesPerFloat;
  const double forward_flops = images * layer.forward_flops;
  // A layer that reads the model input passes no gradient back: nobody needs the input's.
  const bool passes_gradient = !layer.inputs.empty();
  std::vector<LayerKernel> kernels;
  const auto add = [&](KernelPass pass, std::optional<GemmShape> gemm, double bytes) {
    LayerKernel kernel;
    kernel.layer = layer_index;
    kernel.pass = pass;
    kernel.gemm = gemm;
    kernel.kind = layer.kind;
    kernel.flops = forward_flops;
    kernel.bytes = bytes;
    kernel.model = model.name;
    kernel.layer_name = layer.name;
    kernel.batch = batch;
    kernel.channels = layer.input.channels;
    kernel.winograd = winograd_of(layer, batch, pass);
    if (gemm) kernel.lowered_elements = lowered_elements(layer, batch);
    kernels.push_back(std::move(kernel));
  };
  if (gemm_like(layer.kind)) {
    const GemmPasses gemm = gemm_passes(layer, batch);
    add(KernelPass::kForward, gemm.forward, in + weights + out);
    if (passes_gradient) add(KernelPass::kBackwardData, gemm.backward_data, out + weights + in);
    add(KernelPass::kBackwardWeights, gemm.backward_weights, out + in + weights);
    return kernels;
  }
  // Streaming: the forward reads its inputs and writes its output; the backward reads the output's gradient and
  // the input and writes the input's gradient (a batch norm's scale and shift gradients in the same pass).
  add(KernelPass::kForward, std::nullopt, in + weights + out);
  if (passes_gradient) add(KernelPass::kBackwardData, std::nullopt, out + 2 * in + weights);
  return kernels;
}

double layer_alone_bytes(const LayerSpec& layer, std::int64_t batch) {
  const auto images = static_cast<double>(batch);
  return kBytesPerFloat * (2 * images * static_cast<double>(layer.input.elements() + layer.output.elements()) +
                           2 * static_cast<double>(layer.parameters));
}

std::vector<LayerKernel> iteration_kernels(const ModelSpec& model, std::int64_t batch) {
  std::vector<LayerKernel> kernels;
  const auto take = [&](std::size_t layer, bool forward) {
    for (const LayerKernel& kernel : layer_kernels(model, layer, batch)) {
      if ((kernel.pass == KernelPass::kForward) == forward) kernels.push_back(kernel);
    }
  };
  for (std::size_t layer = 0; layer < model.layers.size(); ++layer) take(layer, true);
  // Backward passes run last layer first; within a layer, the input's gradient before the weights'.
  for (std::size_t layer = model.layers.size(); layer-- > 0;) take(layer, false);
  return kernels;
}

}  // namespace dsgd
