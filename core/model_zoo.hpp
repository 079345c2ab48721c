#pragma once
// The model zoo: per-layer descriptions of the networks dsgd trains, measures and simulates. Every number is
// computed from the layer shapes (kernel, stride, padding, channels); totals are sums over layers, never typed in.
// The published totals each model is checked against live beside it, with their source.
//
// Conventions (docs/models.md):
//  * shapes are per image, channels x height x width (a fully connected output is C x 1 x 1);
//  * forward_flops counts a multiply-add as 2 FLOPs (so ResNet-50's published 4.1 G multiply-adds is 8.2 GFLOP);
//  * parameters include biases and batch-norm scale/shift (not running statistics, which are not trained);
//  * activation_bytes is the fp32 size of the layer's output for one image.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd {

struct Shape {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t elements() const { return channels * height * width; }
  bool operator==(const Shape&) const = default;
};

// "C×H×W", e.g. "3×224×224".
std::string to_string(const Shape& shape);

enum class LayerKind {
  kConvolution,
  kMaxPool,
  kAveragePool,
  kReLU,
  kLocalResponseNorm,
  kBatchNorm,
  kInnerProduct,
  kDropout,
  kSoftmax,
  kConcat,
  kEltwiseAdd,
};

std::string_view to_string(LayerKind kind);

struct LayerSpec {
  std::string name;
  LayerKind kind = LayerKind::kConvolution;
  Shape input;  // for kConcat/kEltwiseAdd: the first input's shape
  Shape output;
  // Geometry of convolution and pooling (0 where it does not apply); groups for grouped convolution (AlexNet).
  std::int64_t kernel_h = 0, kernel_w = 0, stride = 0, pad_h = 0, pad_w = 0, groups = 1;
  std::int64_t parameters = 0;
  double forward_flops = 0;           // per image
  std::int64_t activation_bytes = 0;  // fp32 output per image
  // Names of the layers whose outputs this layer reads, in order; empty for a layer that reads the model input.
  // Makes branches explicit: a concat or add lists every input, a branch's first layer names the fork point.
  std::vector<std::string> inputs;
};

// A published figure a model is held against, with where it comes from.
struct PublishedTotals {
  std::int64_t parameters = 0;
  std::optional<double> forward_multiply_adds;  // per image, where published
  std::string source;
};

struct ModelSpec {
  std::string name;         // the zoo key, e.g. "resnet50"
  std::string description;  // one line
  Shape input;
  std::int64_t classes = 0;
  std::vector<LayerSpec> layers;
  PublishedTotals published;

  std::int64_t parameters() const;
  double forward_flops() const;  // per image
  // Multiply-adds of the convolution and inner-product layers per image: the figure papers and frameworks
  // publish (e.g. ResNet-50's 4.1 G), comparable with published.forward_multiply_adds.
  double forward_multiply_adds() const;
  std::int64_t activation_bytes() const;  // per image, sum over layers
  // Seed 004's computation/communication ratio: forward FLOPs per image / parameters.
  double flops_per_parameter() const { return forward_flops() / static_cast<double>(parameters()); }
};

// Names of the zoo's models, in a stable order (small to large within each family).
std::vector<std::string> model_names();

// Builds a model by name; throws UnknownNameError listing the valid names.
ModelSpec build_model(std::string_view name);

}  // namespace dsgd
