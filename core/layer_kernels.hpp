#pragma once
// The kernels of one training iteration, layer by layer and pass by pass, with their shapes: what a cost model
// needs to price each kernel apart rather than the whole iteration at one rate (docs/simulation.md "Kernels by
// shape"). A convolution is an implicit GEMM per group, an inner product a GEMM; the other layers stream their
// tensors through memory.
//
// Passes: forward; backward-data (the input's gradient: none for a layer that reads the model input, whose
// gradient nobody needs); backward-weights (layers with parameters). A GEMM-like layer's backward passes each do
// the forward's multiply-adds again (3x forward in all); a streaming layer's backward does its forward's work once.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model_zoo.hpp"

namespace dsgd {

enum class KernelPass { kForward, kBackwardData, kBackwardWeights };
std::string_view to_string(KernelPass pass);

// C (m x n) += A (m x k) B (k x n), `count` times over independent operands (a grouped convolution's groups).
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t count = 1;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(count);
  }
  bool operator==(const GemmShape&) const = default;
};

// One pass of a 3x3 convolution of stride 1 as Winograd F(m x m, 3x3) (Lavin and Gray 2016): the pass's output grid
// cut into tiles of m x m outputs, each from an (m + 2) x (m + 2) input tile, and the product done as (m + 2)^2
// GEMMs over the tiles -- (m + 2)^2 multiplies per m x m outputs where the direct form does 9 m^2. A library that
// has it (cuDNN) picks it where it is faster.
struct Winograd3x3 {
  KernelPass pass = KernelPass::kForward;
  std::int64_t batch = 0;
  std::int64_t height = 0;        // the grid the pass tiles: the output's (forward, backward-weights) or the input's
  std::int64_t width = 0;         // (backward-data)
  std::int64_t channels_in = 0;   // summed over (the GEMMs' k; backward-weights: their n)
  std::int64_t channels_out = 0;  // produced (the GEMMs' n; backward-weights: their m)
  std::int64_t groups = 1;
  // The GEMMs at output tile m: forward and backward-data (tiles x out) += (tiles x in) (in x out); backward-weights
  // (out x in) += (out x tiles) (tiles x in). `count` is (m + 2)^2 x groups.
  GemmShape gemm(std::int64_t output_tile) const;
};

struct LayerKernel {
  std::size_t layer = 0;  // index into ModelSpec::layers
  KernelPass pass = KernelPass::kForward;
  std::optional<GemmShape> gemm;  // convolution and inner product; empty for a streaming kernel
  std::optional<LayerKind> kind;  // the layer's, where the kernel is one (a library's rate can depend on it)
  double flops = 0;
  double bytes = 0;  // fp32 tensors read and written once each: inputs, weights, outputs, gradients
  // Which kernel it is, for a profile of measured times (platforms/kernel_profile.hpp): model, layer, images.
  std::string model;
  std::string layer_name;
  std::int64_t batch = 0;
  std::int64_t channels = 0;  // the layer's input channels (a library that blocks channels pads them)
  // A convolution's column matrix (patch x output pixels x groups), which a library that lowers it to a GEMM builds
  // or scatters back; 0 for a 1x1 convolution of stride 1 without padding (its input is the matrix) and for every
  // other layer.
  std::int64_t lowered_elements = 0;
  // A 3x3 convolution of stride 1 can be computed as Winograd F(m x m, 3x3) instead; empty for every other kernel.
  std::optional<Winograd3x3> winograd;
};

// The kernels of layer `layer` of `model` for a batch of `batch` images, forward first. Throws InputError for a
// batch < 1 or a layer index out of range.
std::vector<LayerKernel> layer_kernels(const ModelSpec& model, std::size_t layer, std::int64_t batch);

// The fp32 bytes a layer run alone holds at `batch` images: its input, its output, their gradients, its parameters
// and theirs (how `dsgd calibrate --layers` runs it, and so the resident set its kernels are priced in).
double layer_alone_bytes(const LayerSpec& layer, std::int64_t batch);

// Every kernel of an iteration in the order a framework runs them: each layer's forward, first to last, then each
// layer's backward passes, last to first.
std::vector<LayerKernel> iteration_kernels(const ModelSpec& model, std::int64_t batch);

}  // namespace dsgd
