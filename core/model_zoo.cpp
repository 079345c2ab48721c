#include "core/model_zoo.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "core/enum_names.hpp"
#include "core/error.hpp"

namespace dsgd {

namespace {
// Indexed by LayerKind: keep in declaration order.
constexpr EnumNames<11> kLayerKindNames = {
    "convolution",   "max_pool", "average_pool", "relu",   "local_response_norm", "batch_norm",
    "inner_product", "dropout",  "softmax",      "concat", "eltwise_add"};
}  // namespace

std::string_view to_string(LayerKind kind) { return name_of(kind, kLayerKindNames, "unknown"); }

std::string to_string(const Shape& shape) {
  return std::to_string(shape.channels) + "×" + std::to_string(shape.height) + "×" + std::to_string(shape.width);
}

std::int64_t ModelSpec::parameters() const {
  std::int64_t total = 0;
  for (const LayerSpec& layer : layers) total += layer.parameters;
  return total;
}

double ModelSpec::forward_flops() const {
  double total = 0;
  for (const LayerSpec& layer : layers) total += layer.forward_flops;
  return total;
}

double ModelSpec::forward_multiply_adds() const {
  double total = 0;
  for (const LayerSpec& layer : layers) {
    if (layer.kind == LayerKind::kConvolution || layer.kind == LayerKind::kInnerProduct) {
      total += layer.forward_flops / 2;
    }
  }
  return total;
}

std::int64_t ModelSpec::activation_bytes() const {
  std::int64_t total = 0;
  for (const LayerSpec& layer : layers) total += layer.activation_bytes;
  return total;
}

namespace {

// FLOPs per output element of the layers that are not multiply-add bound (docs/models.md, "Conventions").
// Pooling costs kernel_h * kernel_w per output element and LRN 2 * local_size + 4; both are computed below.
constexpr double kReluFlopsPerElement = 1;       // one compare
constexpr double kBatchNormFlopsPerElement = 2;  // y = a*x + b with per-channel a, b folded from mean/var/scale/shift
constexpr double kDropoutFlopsPerElement = 1;    // multiply by the scaled mask
constexpr double kSoftmaxFlopsPerElement = 3;    // exponential, accumulate, divide
constexpr double kAddFlopsPerElement = 1;        // per input beyond the first
constexpr std::int64_t kLrnLocalSize = 5;        // AlexNet's and GoogLeNet's window across channels
constexpr std::int64_t kBytesPerActivation = 4;  // fp32

// Caffe rounds pooling output sizes up (ceil), PyTorch by default down (floor); convolutions always round down.
enum class Rounding { kFloor, kCeil };

std::int64_t conv_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  DSGD_ENFORCE_GE(in + 2 * pad, kernel);
  return (in + 2 * pad - kernel) / stride + 1;
}

std::int64_t pool_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                              Rounding rounding) {
  DSGD_ENFORCE_GE(in + 2 * pad, kernel);
  const std::int64_t span = in + 2 * pad - kernel;
  std::int64_t out = (rounding == Rounding::kCeil ? (span + stride - 1) / stride : span / stride) + 1;
  // In ceil mode Caffe and PyTorch drop a last window that would start inside the right padding.
  if (rounding == Rounding::kCeil && pad > 0 && (out - 1) * stride >= in + pad) --out;
  return out;
}

// A point in the network: the layer that produced a tensor (empty for the model input) and its shape.
struct Tap {
  std::string layer;
  Shape shape;
};

struct ConvSpec {
  std::int64_t out_channels = 0;
  std::int64_t kernel_h = 1;
  std::int64_t kernel_w = 1;
  std::int64_t stride = 1;
  std::int64_t pad_h = 0;
  std::int64_t pad_w = 0;
  std::int64_t groups = 1;
  bool bias = true;
};

// A square convolution with bias, as in the Caffe-era networks (conv_bn() drops the bias).
ConvSpec square(std::int64_t out_channels, std::int64_t kernel, std::int64_t stride = 1, std::int64_t pad = 0,
                std::int64_t groups = 1) {
  return {out_channels, kernel, kernel, stride, pad, pad, groups, true};
}

// Builds the layer list of one network while tracking the current tensor shape. Every parameter and FLOP count
// is derived here from shapes; the model functions below only state the architecture. Branches: take tap(),
// build one branch, take its tap(), resume() from the fork point for the next branch, then concat() or add().
class NetBuilder {
 public:
  explicit NetBuilder(Shape input) : tap_{"", input} {}

  const Tap& tap() const { return tap_; }
  const Shape& shape() const { return tap_.shape; }
  void resume(const Tap& from) { tap_ = from; }

  void conv(const std::string& name, const ConvSpec& c) {
    const Shape in = shape();
    DSGD_ENFORCE_EQ(in.channels % c.groups, 0);
    DSGD_ENFORCE_EQ(c.out_channels % c.groups, 0);
    const Shape out{c.out_channels, conv_output_size(in.height, c.kernel_h, c.stride, c.pad_h),
                    conv_output_size(in.width, c.kernel_w, c.stride, c.pad_w)};
    // Each output element reads (C_in / groups) * kh * kw inputs: one multiply-add each.
    const std::int64_t macs_per_output = (in.channels / c.groups) * c.kernel_h * c.kernel_w;
    LayerSpec& layer = append(name, LayerKind::kConvolution, out);
    layer.kernel_h = c.kernel_h;
    layer.kernel_w = c.kernel_w;
    layer.stride = c.stride;
    layer.pad_h = c.pad_h;
    layer.pad_w = c.pad_w;
    layer.groups = c.groups;
    layer.parameters = c.out_channels * macs_per_output + (c.bias ? c.out_channels : 0);
    layer.forward_flops = 2.0 * static_cast<double>(macs_per_output * out.elements());
  }

  void max_pool(const std::string& name, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                Rounding rounding) {
    pool(name, LayerKind::kMaxPool, kernel, kernel, stride, pad, rounding);
  }

  void average_pool(const std::string& name, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                    Rounding rounding) {
    pool(name, LayerKind::kAveragePool, kernel, kernel, stride, pad, rounding);
  }

  // Averages each channel over its whole map (Caffe's 7x7 "pool5", PyTorch's AdaptiveAvgPool2d(1)).
  void global_average_pool(const std::string& name) {
    pool(name, LayerKind::kAveragePool, shape().height, shape().width, 1, 0, Rounding::kFloor);
  }

  void relu(const std::string& name) { elementwise(name, LayerKind::kReLU, kReluFlopsPerElement); }

  // Local response normalisation across kLrnLocalSize channels: the window's sum of squares (local_size
  // multiply-adds), then scale and offset (a multiply-add), the power and the divide.
  void lrn(const std::string& name) {
    elementwise(name, LayerKind::kLocalResponseNorm, 2.0 * static_cast<double>(kLrnLocalSize) + 4.0);
  }

  // Trained scale and shift per channel; the running mean and variance are statistics, not parameters.
  void batch_norm(const std::string& name) {
    const std::int64_t channels = shape().channels;
    elementwise(name, LayerKind::kBatchNorm, kBatchNormFlopsPerElement).parameters = 2 * channels;
  }

  void dropout(const std::string& name) { elementwise(name, LayerKind::kDropout, kDropoutFlopsPerElement); }

  void softmax(const std::string& name) { elementwise(name, LayerKind::kSoftmax, kSoftmaxFlopsPerElement); }

  // Fully connected: flattens the current tensor, weights in x out plus out biases.
  void inner_product(const std::string& name, std::int64_t outputs) {
    const std::int64_t inputs = shape().elements();
    LayerSpec& layer = append(name, LayerKind::kInnerProduct, Shape{outputs, 1, 1});
    layer.parameters = inputs * outputs + outputs;
    layer.forward_flops = 2.0 * static_cast<double>(inputs * outputs);
  }

  // Joins branches along channels; they must agree in height and width. Costs no arithmetic.
  void concat(const std::string& name, const std::vector<Tap>& parts) {
    DSGD_ENFORCE(!parts.empty(), "concat " + name + " has no inputs");
    Shape out{0, parts.front().shape.height, parts.front().shape.width};
    for (const Tap& part : parts) {
      DSGD_ENFORCE_EQ(part.shape.height, out.height);
      DSGD_ENFORCE_EQ(part.shape.width, out.width);
      out.channels += part.shape.channels;
    }
    join(name, LayerKind::kConcat, parts, out, 0);
  }

  // Residual sum of equally shaped tensors.
  void add(const std::string& name, const std::vector<Tap>& parts) {
    DSGD_ENFORCE_GE(parts.size(), std::size_t{2});
    for (const Tap& part : parts) DSGD_ENFORCE(part.shape == parts.front().shape, "add " + name + " shapes differ");
    const double flops = kAddFlopsPerElement * static_cast<double>(parts.size() - 1) *
                         static_cast<double>(parts.front().shape.elements());
    join(name, LayerKind::kEltwiseAdd, parts, parts.front().shape, flops);
  }

  std::vector<LayerSpec> take() && { return std::move(layers_); }

 private:
  // Appends a layer that reads the current tensor and makes its output the current tensor.
  LayerSpec& append(const std::string& name, LayerKind kind, const Shape& out) {
    DSGD_ENFORCE(names_.insert(name).second, "duplicate layer name " + name);
    DSGD_ENFORCE(out.channels > 0 && out.height > 0 && out.width > 0, "empty output in layer " + name);
    LayerSpec layer;
    layer.name = name;
    layer.kind = kind;
    layer.input = shape();
    layer.output = out;
    layer.activation_bytes = out.elements() * kBytesPerActivation;
    if (!tap_.layer.empty()) layer.inputs.push_back(tap_.layer);
    layers_.push_back(std::move(layer));
    tap_ = Tap{name, out};
    return layers_.back();
  }

  LayerSpec& elementwise(const std::string& name, LayerKind kind, double flops_per_element) {
    LayerSpec& layer = append(name, kind, shape());
    layer.forward_flops = flops_per_element * static_cast<double>(layer.output.elements());
    return layer;
  }

  void pool(const std::string& name, LayerKind kind, std::int64_t kernel_h, std::int64_t kernel_w, std::int64_t stride,
            std::int64_t pad, Rounding rounding) {
    const Shape in = shape();
    const Shape out{in.channels, pool_output_size(in.height, kernel_h, stride, pad, rounding),
                    pool_output_size(in.width, kernel_w, stride, pad, rounding)};
    LayerSpec& layer = append(name, kind, out);
    layer.kernel_h = kernel_h;
    layer.kernel_w = kernel_w;
    layer.stride = stride;
    layer.pad_h = pad;
    layer.pad_w = pad;
    // One compare (max) or add (average, whose final scale replaces the first add) per window element.
    layer.forward_flops = static_cast<double>(kernel_h * kernel_w * out.elements());
  }

  void join(const std::string& name, LayerKind kind, const std::vector<Tap>& parts, const Shape& out, double flops) {
    tap_ = parts.front();
    LayerSpec& layer = append(name, kind, out);
    layer.inputs.clear();
    for (const Tap& part : parts) {
      DSGD_ENFORCE(!part.layer.empty(), "layer " + name + " joins the model input directly");
      layer.inputs.push_back(part.layer);
    }
    layer.forward_flops = flops;
  }

  std::vector<LayerSpec> layers_;
  std::set<std::string> names_;
  Tap tap_;
};

ModelSpec make_spec(std::string description, Shape input, std::int64_t classes, NetBuilder&& builder,
                    PublishedTotals published) {
  ModelSpec spec;
  spec.description = std::move(description);
  spec.input = input;
  spec.classes = classes;
  spec.layers = std::move(builder).take();
  spec.published = std::move(published);
  DSGD_ENFORCE(spec.layers.back().output == (Shape{classes, 1, 1}), "model does not end in its classes");
  return spec;
}

// --- LeNet (Caffe examples/mnist/lenet.prototxt) ------------------------------------------------------------------

ModelSpec build_lenet() {
  const Shape input{1, 28, 28};
  NetBuilder b(input);
  b.conv("conv1", square(20, 5));
  b.max_pool("pool1", 2, 2, 0, Rounding::kCeil);
  b.conv("conv2", square(50, 5));
  b.max_pool("pool2", 2, 2, 0, Rounding::kCeil);
  b.inner_product("ip1", 500);
  b.relu("relu1");
  b.inner_product("ip2", 10);
  b.softmax("prob");
  return make_spec("LeNet as in Caffe's MNIST example (seed 000 Fig. 3): 2 conv, 2 fully connected", input, 10,
                   std::move(b),
                   {431080, std::nullopt,
                    "BVLC Caffe examples/mnist/lenet.prototxt (the network seed 000 trains on MNIST): weights + "
                    "biases of its conv 20x5x5, conv 50x5x5, ip 500, ip 10; no multiply-add count is published"});
}

// --- AlexNet-style networks ---------------------------------------------------------------------------------------

// Both AlexNets from conv3 on: three 3x3 convolutions (conv4 and conv5 in `groups`, Caffe's two-GPU split), pool5,
// two 4096-wide fully connected layers with dropout, and the classifier.
void alexnet_conv3_to_prob(NetBuilder& b, std::int64_t groups, std::int64_t classes) {
  b.conv("conv3", square(384, 3, 1, 1));
  b.relu("relu3");
  b.conv("conv4", square(384, 3, 1, 1, groups));
  b.relu("relu4");
  b.conv("conv5", square(256, 3, 1, 1, groups));
  b.relu("relu5");
  b.max_pool("pool5", 3, 2, 0, Rounding::kCeil);
  for (const char* index : {"6", "7"}) {
    b.inner_product(std::string("fc") + index, 4096);
    b.relu(std::string("relu") + index);
    b.dropout(std::string("drop") + index);
  }
  b.inner_product("fc8", classes);
  b.softmax("prob");
}

// The 5 conv + 3 fc AlexNet of seed 000 §4.2, adapted to 32x32 CIFAR-10 (the seed gives no layer shapes).
ModelSpec build_cifar10_alexnet() {
  const Shape input{3, 32, 32};
  NetBuilder b(input);
  b.conv("conv1", square(96, 5, 1, 2));
  b.relu("relu1");
  b.max_pool("pool1", 3, 2, 0, Rounding::kCeil);
  b.lrn("norm1");
  b.conv("conv2", square(256, 5, 1, 2));
  b.relu("relu2");
  b.max_pool("pool2", 3, 2, 0, Rounding::kCeil);
  b.lrn("norm2");
  alexnet_conv3_to_prob(b, 1, 10);
  return make_spec("AlexNet-style net for CIFAR-10 (seed 000 §4.2: 5 conv + 3 fc), designed here for 3x32x32", input,
                   10, std::move(b),
                   {0, std::nullopt,
                    "seed 000 §6.2: \"the AlexNet is 249 MB\"; the seed gives no layer shapes and 249 MB is "
                    "ImageNet AlexNet's ~62 M fp32 parameters, so no published count describes this network"});
}

// Caffe's bvlc_alexnet: two-GPU grouping kept in conv2, conv4 and conv5; LRN before pooling.
ModelSpec build_alexnet() {
  const Shape input{3, 227, 227};
  NetBuilder b(input);
  b.conv("conv1", square(96, 11, 4, 0));
  b.relu("relu1");
  b.lrn("norm1");
  b.max_pool("pool1", 3, 2, 0, Rounding::kCeil);
  b.conv("conv2", square(256, 5, 1, 2, 2));
  b.relu("relu2");
  b.lrn("norm2");
  b.max_pool("pool2", 3, 2, 0, Rounding::kCeil);
  alexnet_conv3_to_prob(b, 2, 1000);
  return make_spec("AlexNet (Krizhevsky et al. 2012) as Caffe's bvlc_alexnet, 227x227, groups=2 in conv2/4/5", input,
                   1000, std::move(b),
                   {60965224, 724e6,
                    "parameters: BVLC Caffe models/bvlc_alexnet/deploy.prototxt (60,965,224 weights + biases; "
                    "Krizhevsky et al. 2012 §1: \"60 million\"); multiply-adds: Sze et al., \"Efficient Processing "
                    "of Deep Neural Networks: A Tutorial and Survey\", Proc. IEEE 2017, summary table of popular "
                    "DNNs: 724 M MACs"});
}

// --- GoogLeNet (Inception v1) -------------------------------------------------------------------------------------

// One Inception module of Szegedy et al. 2015 Table 1 (columns #1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5,
// pool proj), with Caffe bvlc_googlenet's layer names.
struct InceptionV1Widths {
  std::int64_t c1x1, c3x3_reduce, c3x3, c5x5_reduce, c5x5, pool_proj;
};

void inception_v1(NetBuilder& b, const std::string& name, const InceptionV1Widths& w) {
  const Tap in = b.tap();
  const auto conv_relu = [&](const std::string& suffix, const ConvSpec& c) {
    b.conv(name + "/" + suffix, c);
    b.relu(name + "/relu_" + suffix);
    return b.tap();
  };
  const Tap branch1 = conv_relu("1x1", square(w.c1x1, 1));
  b.resume(in);
  conv_relu("3x3_reduce", square(w.c3x3_reduce, 1));
  const Tap branch2 = conv_relu("3x3", square(w.c3x3, 3, 1, 1));
  b.resume(in);
  conv_relu("5x5_reduce", square(w.c5x5_reduce, 1));
  const Tap branch3 = conv_relu("5x5", square(w.c5x5, 5, 1, 2));
  b.resume(in);
  b.max_pool(name + "/pool", 3, 1, 1, Rounding::kCeil);
  const Tap branch4 = conv_relu("pool_proj", square(w.pool_proj, 1));
  b.concat(name + "/output", {branch1, branch2, branch3, branch4});
}

ModelSpec build_googlenet() {
  const Shape input{3, 224, 224};
  NetBuilder b(input);
  b.conv("conv1/7x7_s2", square(64, 7, 2, 3));
  b.relu("conv1/relu_7x7");
  b.max_pool("pool1/3x3_s2", 3, 2, 0, Rounding::kCeil);
  b.lrn("pool1/norm1");
  b.conv("conv2/3x3_reduce", square(64, 1));
  b.relu("conv2/relu_3x3_reduce");
  b.conv("conv2/3x3", square(192, 3, 1, 1));
  b.relu("conv2/relu_3x3");
  b.lrn("conv2/norm2");
  b.max_pool("pool2/3x3_s2", 3, 2, 0, Rounding::kCeil);
  inception_v1(b, "inception_3a", {64, 96, 128, 16, 32, 32});
  inception_v1(b, "inception_3b", {128, 128, 192, 32, 96, 64});
  b.max_pool("pool3/3x3_s2", 3, 2, 0, Rounding::kCeil);
  inception_v1(b, "inception_4a", {192, 96, 208, 16, 48, 64});
  inception_v1(b, "inception_4b", {160, 112, 224, 24, 64, 64});
  inception_v1(b, "inception_4c", {128, 128, 256, 24, 64, 64});
  inception_v1(b, "inception_4d", {112, 144, 288, 32, 64, 64});
  inception_v1(b, "inception_4e", {256, 160, 320, 32, 128, 128});
  b.max_pool("pool4/3x3_s2", 3, 2, 0, Rounding::kCeil);
  inception_v1(b, "inception_5a", {256, 160, 320, 32, 128, 128});
  inception_v1(b, "inception_5b", {384, 192, 384, 48, 128, 128});
  b.global_average_pool("pool5/7x7_s1");
  b.dropout("pool5/drop_7x7_s1");
  b.inner_product("loss3/classifier", 1000);
  b.softmax("prob");
  return make_spec(
      "GoogLeNet / Inception v1 (Szegedy et al. 2015), 224x224, no auxiliary classifiers, no BN", input, 1000,
      std::move(b),
      {6998552, 1.5e9,
       "parameters: BVLC Caffe models/bvlc_googlenet/deploy.prototxt (no auxiliary heads), 6,998,552 "
       "as printed by CaffeJS (chaosmail/caffejs README) and listed in HewlettPackard/dlcookbook-dlbs "
       "docs/models/models.md (Szegedy et al. 2015 Table 1's 6.8 M is in K = 1024 units, its linear row "
       "1000K being 1,024,000 weights, and has row errors); multiply-adds: Szegedy et al. 2015 §1, "
       "\"1.5 billion multiply-adds at inference time\" (Table 1's ops column; its conv1 row has 34 M where "
       "the layer shape gives 118 M)"});
}

// --- VGG (Simonyan & Zisserman 2015, configurations D and E) ------------------------------------------------------

// `convs_per_stage` holds the number of 3x3 convolutions in each of the five stages (widths 64..512).
ModelSpec build_vgg(const std::array<int, 5>& convs_per_stage, std::string description, PublishedTotals published) {
  constexpr std::array<std::int64_t, 5> kStageWidths = {64, 128, 256, 512, 512};
  const Shape input{3, 224, 224};
  NetBuilder b(input);
  for (std::size_t stage = 0; stage < kStageWidths.size(); ++stage) {
    const std::string s = std::to_string(stage + 1);
    for (int i = 1; i <= convs_per_stage[stage]; ++i) {
      const std::string suffix = s + "_" + std::to_string(i);
      b.conv("conv" + suffix, square(kStageWidths[stage], 3, 1, 1));
      b.relu("relu" + suffix);
    }
    b.max_pool("pool" + s, 2, 2, 0, Rounding::kFloor);
  }
  for (const char* index : {"6", "7"}) {
    b.inner_product(std::string("fc") + index, 4096);
    b.relu(std::string("relu") + index);
    b.dropout(std::string("drop") + index);
  }
  b.inner_product("fc8", 1000);
  b.softmax("prob");
  return make_spec(std::move(description), input, 1000, std::move(b), std::move(published));
}

ModelSpec build_vgg16() {
  return build_vgg({2, 2, 3, 3, 3}, "VGG-16 (Simonyan & Zisserman 2015, configuration D), 224x224",
                   {138357544, 15.47e9,
                    "torchvision.models.vgg16, VGG16_Weights.IMAGENET1K_V1 (num_params 138,357,544; GFLOPS 15.47, "
                    "which torchvision counts as multiply-adds); Simonyan & Zisserman 2015 Table 2: 138 M"});
}

ModelSpec build_vgg19() {
  return build_vgg({2, 2, 4, 4, 4}, "VGG-19 (Simonyan & Zisserman 2015, configuration E), 224x224",
                   {143667240, 19.632e9,
                    "torchvision.models.vgg19, VGG19_Weights.IMAGENET1K_V1 (num_params 143,667,240; GFLOPS 19.63, "
                    "multiply-adds); He et al. 2016 §3.3: VGG-19 has 19.6 billion FLOPs (multiply-adds)"});
}

// --- ResNet (He et al. 2016), torchvision's v1.5 bottleneck -------------------------------------------------------

// Convolution without bias followed by batch norm, the unit of every ResNet and Inception v3 layer.
void conv_bn(NetBuilder& b, const std::string& conv_name, const std::string& bn_name, ConvSpec c) {
  c.bias = false;
  b.conv(conv_name, c);
  b.batch_norm(bn_name);
}

// Bottleneck block: 1x1 reduce, 3x3 (carrying the stride, as torchvision does), 1x1 expand x4, plus a projection
// shortcut (1x1 conv + BN) when the shape changes.
void bottleneck(NetBuilder& b, const std::string& name, std::int64_t width, std::int64_t stride) {
  const std::int64_t out_channels = 4 * width;
  const Tap in = b.tap();
  conv_bn(b, name + ".conv1", name + ".bn1", square(width, 1));
  b.relu(name + ".relu1");
  conv_bn(b, name + ".conv2", name + ".bn2", square(width, 3, stride, 1));
  b.relu(name + ".relu2");
  conv_bn(b, name + ".conv3", name + ".bn3", square(out_channels, 1));
  const Tap residual = b.tap();
  Tap shortcut = in;
  if (stride != 1 || in.shape.channels != out_channels) {
    b.resume(in);
    conv_bn(b, name + ".downsample.0", name + ".downsample.1", square(out_channels, 1, stride));
    shortcut = b.tap();
  }
  b.add(name + ".add", {residual, shortcut});
  b.relu(name + ".relu3");
}

ModelSpec build_resnet(const std::array<int, 4>& blocks_per_stage, std::string description, PublishedTotals published) {
  const Shape input{3, 224, 224};
  NetBuilder b(input);
  conv_bn(b, "conv1", "bn1", square(64, 7, 2, 3));
  b.relu("relu");
  b.max_pool("maxpool", 3, 2, 1, Rounding::kFloor);
  std::int64_t width = 64;
  for (std::size_t stage = 0; stage < blocks_per_stage.size(); ++stage) {
    for (int block = 0; block < blocks_per_stage[stage]; ++block) {
      // The first block of stages 2-4 halves the spatial size.
      const std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      bottleneck(b, "layer" + std::to_string(stage + 1) + "." + std::to_string(block), width, stride);
    }
    width *= 2;
  }
  b.global_average_pool("avgpool");
  b.inner_product("fc", 1000);
  b.softmax("prob");
  return make_spec(std::move(description), input, 1000, std::move(b), std::move(published));
}

ModelSpec build_resnet50() {
  return build_resnet({3, 4, 6, 3}, "ResNet-50 (He et al. 2016) as torchvision's resnet50 (stride in the 3x3), 224x224",
                      {25557032, 4.089e9,
                       "torchvision.models.resnet50, ResNet50_Weights.IMAGENET1K_V1 (num_params 25,557,032; GFLOPS "
                       "4.09, counted as multiply-adds); He et al. 2016 Table 1 gives 3.8e9 for the stride-in-1x1 "
                       "original"});
}

ModelSpec build_resnet101() {
  return build_resnet({3, 4, 23, 3},
                      "ResNet-101 (He et al. 2016) as torchvision's resnet101 (stride in the 3x3), 224x224",
                      {44549160, 7.801e9,
                       "torchvision.models.resnet101, ResNet101_Weights.IMAGENET1K_V1 (num_params 44,549,160; "
                       "GFLOPS 7.80, counted as multiply-adds); He et al. 2016 Table 1 gives 7.6e9 for the "
                       "stride-in-1x1 original"});
}

ModelSpec build_resnet152() {
  return build_resnet({3, 8, 36, 3},
                      "ResNet-152 (He et al. 2016) as torchvision's resnet152 (stride in the 3x3), 224x224",
                      {60192808, 11.514e9,
                       "torchvision.models.resnet152, ResNet152_Weights.IMAGENET1K_V1 (num_params 60,192,808; "
                       "GFLOPS 11.51, counted as multiply-adds); He et al. 2016 Table 1 gives 11.3e9 for the "
                       "stride-in-1x1 original"});
}

// --- Inception v3 (Szegedy et al. 2016), torchvision's Inception3 without the auxiliary head ----------------------

// torchvision's BasicConv2d: conv without bias, BN with affine scale and shift, ReLU.
Tap basic_conv(NetBuilder& b, const std::string& name, const ConvSpec& c) {
  conv_bn(b, name + ".conv", name + ".bn", c);
  b.relu(name + ".relu");
  return b.tap();
}

// An asymmetric kernel (1x7, 7x1, 1x3, 3x1) with "same" padding.
ConvSpec rect(std::int64_t out_channels, std::int64_t kernel_h, std::int64_t kernel_w) {
  return {out_channels, kernel_h, kernel_w, 1, kernel_h / 2, kernel_w / 2, 1, false};
}

void inception_a(NetBuilder& b, const std::string& name, std::int64_t pool_features) {
  const Tap in = b.tap();
  const Tap branch1x1 = basic_conv(b, name + ".branch1x1", square(64, 1));
  b.resume(in);
  basic_conv(b, name + ".branch5x5_1", square(48, 1));
  const Tap branch5x5 = basic_conv(b, name + ".branch5x5_2", square(64, 5, 1, 2));
  b.resume(in);
  basic_conv(b, name + ".branch3x3dbl_1", square(64, 1));
  basic_conv(b, name + ".branch3x3dbl_2", square(96, 3, 1, 1));
  const Tap branch3x3dbl = basic_conv(b, name + ".branch3x3dbl_3", square(96, 3, 1, 1));
  b.resume(in);
  b.average_pool(name + ".avg_pool", 3, 1, 1, Rounding::kFloor);
  const Tap branch_pool = basic_conv(b, name + ".branch_pool", square(pool_features, 1));
  b.concat(name + ".concat", {branch1x1, branch5x5, branch3x3dbl, branch_pool});
}

// Grid reduction 35x35 -> 17x17.
void inception_b(NetBuilder& b, const std::string& name) {
  const Tap in = b.tap();
  const Tap branch3x3 = basic_conv(b, name + ".branch3x3", square(384, 3, 2));
  b.resume(in);
  basic_conv(b, name + ".branch3x3dbl_1", square(64, 1));
  basic_conv(b, name + ".branch3x3dbl_2", square(96, 3, 1, 1));
  const Tap branch3x3dbl = basic_conv(b, name + ".branch3x3dbl_3", square(96, 3, 2));
  b.resume(in);
  b.max_pool(name + ".max_pool", 3, 2, 0, Rounding::kFloor);
  const Tap branch_pool = b.tap();
  b.concat(name + ".concat", {branch3x3, branch3x3dbl, branch_pool});
}

// 17x17 module with factorised 7x7 convolutions; c7 is the width inside the 7x7 branches.
void inception_c(NetBuilder& b, const std::string& name, std::int64_t c7) {
  const Tap in = b.tap();
  const Tap branch1x1 = basic_conv(b, name + ".branch1x1", square(192, 1));
  b.resume(in);
  basic_conv(b, name + ".branch7x7_1", square(c7, 1));
  basic_conv(b, name + ".branch7x7_2", rect(c7, 1, 7));
  const Tap branch7x7 = basic_conv(b, name + ".branch7x7_3", rect(192, 7, 1));
  b.resume(in);
  basic_conv(b, name + ".branch7x7dbl_1", square(c7, 1));
  basic_conv(b, name + ".branch7x7dbl_2", rect(c7, 7, 1));
  basic_conv(b, name + ".branch7x7dbl_3", rect(c7, 1, 7));
  basic_conv(b, name + ".branch7x7dbl_4", rect(c7, 7, 1));
  const Tap branch7x7dbl = basic_conv(b, name + ".branch7x7dbl_5", rect(192, 1, 7));
  b.resume(in);
  b.average_pool(name + ".avg_pool", 3, 1, 1, Rounding::kFloor);
  const Tap branch_pool = basic_conv(b, name + ".branch_pool", square(192, 1));
  b.concat(name + ".concat", {branch1x1, branch7x7, branch7x7dbl, branch_pool});
}

// Grid reduction 17x17 -> 8x8.
void inception_d(NetBuilder& b, const std::string& name) {
  const Tap in = b.tap();
  basic_conv(b, name + ".branch3x3_1", square(192, 1));
  const Tap branch3x3 = basic_conv(b, name + ".branch3x3_2", square(320, 3, 2));
  b.resume(in);
  basic_conv(b, name + ".branch7x7x3_1", square(192, 1));
  basic_conv(b, name + ".branch7x7x3_2", rect(192, 1, 7));
  basic_conv(b, name + ".branch7x7x3_3", rect(192, 7, 1));
  const Tap branch7x7x3 = basic_conv(b, name + ".branch7x7x3_4", square(192, 3, 2));
  b.resume(in);
  b.max_pool(name + ".max_pool", 3, 2, 0, Rounding::kFloor);
  const Tap branch_pool = b.tap();
  b.concat(name + ".concat", {branch3x3, branch7x7x3, branch_pool});
}

// 8x8 module whose 3x3 branches split into parallel 1x3 and 3x1 convolutions (concatenated, as torch.cat does).
void inception_e(NetBuilder& b, const std::string& name) {
  const Tap in = b.tap();
  const Tap branch1x1 = basic_conv(b, name + ".branch1x1", square(320, 1));
  b.resume(in);
  const Tap split3x3 = basic_conv(b, name + ".branch3x3_1", square(384, 1));
  const Tap a = basic_conv(b, name + ".branch3x3_2a", rect(384, 1, 3));
  b.resume(split3x3);
  const Tap c = basic_conv(b, name + ".branch3x3_2b", rect(384, 3, 1));
  b.concat(name + ".branch3x3.concat", {a, c});
  const Tap branch3x3 = b.tap();
  b.resume(in);
  basic_conv(b, name + ".branch3x3dbl_1", square(448, 1));
  const Tap split3x3dbl = basic_conv(b, name + ".branch3x3dbl_2", square(384, 3, 1, 1));
  const Tap dbl_a = basic_conv(b, name + ".branch3x3dbl_3a", rect(384, 1, 3));
  b.resume(split3x3dbl);
  const Tap dbl_b = basic_conv(b, name + ".branch3x3dbl_3b", rect(384, 3, 1));
  b.concat(name + ".branch3x3dbl.concat", {dbl_a, dbl_b});
  const Tap branch3x3dbl = b.tap();
  b.resume(in);
  b.average_pool(name + ".avg_pool", 3, 1, 1, Rounding::kFloor);
  const Tap branch_pool = basic_conv(b, name + ".branch_pool", square(192, 1));
  b.concat(name + ".concat", {branch1x1, branch3x3, branch3x3dbl, branch_pool});
}

ModelSpec build_inception_v3() {
  const Shape input{3, 299, 299};
  NetBuilder b(input);
  basic_conv(b, "Conv2d_1a_3x3", square(32, 3, 2));
  basic_conv(b, "Conv2d_2a_3x3", square(32, 3));
  basic_conv(b, "Conv2d_2b_3x3", square(64, 3, 1, 1));
  b.max_pool("maxpool1", 3, 2, 0, Rounding::kFloor);
  basic_conv(b, "Conv2d_3b_1x1", square(80, 1));
  basic_conv(b, "Conv2d_4a_3x3", square(192, 3));
  b.max_pool("maxpool2", 3, 2, 0, Rounding::kFloor);
  inception_a(b, "Mixed_5b", 32);
  inception_a(b, "Mixed_5c", 64);
  inception_a(b, "Mixed_5d", 64);
  inception_b(b, "Mixed_6a");
  inception_c(b, "Mixed_6b", 128);
  inception_c(b, "Mixed_6c", 160);
  inception_c(b, "Mixed_6d", 160);
  inception_c(b, "Mixed_6e", 192);
  inception_d(b, "Mixed_7a");
  inception_e(b, "Mixed_7b");
  inception_e(b, "Mixed_7c");
  b.global_average_pool("avgpool");
  b.dropout("dropout");
  b.inner_product("fc", 1000);
  b.softmax("prob");
  return make_spec("Inception v3 (Szegedy et al. 2016) as torchvision's inception_v3 without AuxLogits, 299x299", input,
                   1000, std::move(b),
                   {23834568, 5.713e9,
                    "torchvision.models.inception_v3, Inception_V3_Weights.IMAGENET1K_V1: num_params 27,161,264 "
                    "includes the training-only AuxLogits head (3,326,696), leaving 23,834,568; GFLOPS 5.71 "
                    "multiply-adds (evaluation mode, no aux head)"});
}

// The zoo, in model_names() order: small to large within each family.
struct ZooEntry {
  std::string_view name;
  ModelSpec (*build)();
};

constexpr std::array<ZooEntry, 10> kZoo = {{
    {"lenet", &build_lenet},
    {"cifar10_alexnet", &build_cifar10_alexnet},
    {"alexnet", &build_alexnet},
    {"googlenet", &build_googlenet},
    {"vgg16", &build_vgg16},
    {"vgg19", &build_vgg19},
    {"resnet50", &build_resnet50},
    {"resnet101", &build_resnet101},
    {"resnet152", &build_resnet152},
    {"inception_v3", &build_inception_v3},
}};

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  names.reserve(kZoo.size());
  for (const ZooEntry& entry : kZoo) names.emplace_back(entry.name);
  return names;
}

ModelSpec build_model(std::string_view name) {
  const auto* entry =
      std::find_if(kZoo.begin(), kZoo.end(), [&](const ZooEntry& candidate) { return candidate.name == name; });
  if (entry == kZoo.end()) throw UnknownNameError("model", name, model_names());
  ModelSpec spec = entry->build();
  spec.name = std::string(entry->name);
  return spec;
}

}  // namespace dsgd
