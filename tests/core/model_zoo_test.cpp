#include "core/model_zoo.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd {
namespace {

const std::vector<std::string> kExpectedNames = {"lenet", "cifar10_alexnet", "alexnet",   "googlenet", "vgg16",
                                                 "vgg19", "resnet50",        "resnet101", "resnet152", "inception_v3"};

const LayerSpec& layer_named(const ModelSpec& model, const std::string& name) {
  for (const LayerSpec& layer : model.layers) {
    if (layer.name == name) return layer;
  }
  throw std::runtime_error("no layer " + name + " in " + model.name);
}

double as_double(std::int64_t value) { return static_cast<double>(value); }

// --- the registry -------------------------------------------------------------------------------------------------

TEST(CoreModelZoo, NamesAreTheZooKeysInOrder) { EXPECT_EQ(model_names(), kExpectedNames); }

TEST(CoreModelZoo, UnknownNameThrowsListingValidNames) {
  EXPECT_THROW(build_model("resnet-50"), UnknownNameError);
  const std::string message = testing::error_of<UnknownNameError>([] { build_model("resnet-50"); });
  EXPECT_NE(message.find("'resnet-50'"), std::string::npos) << message;
  EXPECT_NE(message.find("resnet50"), std::string::npos) << message;
  EXPECT_NE(message.find("inception_v3"), std::string::npos) << message;
}

TEST(CoreModelZoo, ShapesPrintAsChannelsByHeightByWidth) {
  EXPECT_EQ(to_string(Shape{3, 224, 224}), "3×224×224");
  EXPECT_EQ(to_string(Shape{10, 1, 1}), "10×1×1");
}

TEST(CoreModelZoo, LayerKindsHaveNames) {
  EXPECT_EQ(to_string(LayerKind::kConvolution), "convolution");
  EXPECT_EQ(to_string(LayerKind::kEltwiseAdd), "eltwise_add");
}

// --- every model --------------------------------------------------------------------------------------------------

class CoreModelZooEveryModel : public ::testing::TestWithParam<std::string> {};

TEST_P(CoreModelZooEveryModel, BuildsUnderItsKeyWithDescriptionAndSource) {
  const ModelSpec model = build_model(GetParam());
  EXPECT_EQ(model.name, GetParam());
  EXPECT_FALSE(model.description.empty());
  EXPECT_FALSE(model.published.source.empty());
  EXPECT_FALSE(model.layers.empty());
}

// Each layer reads what the layers it names produce: a plain layer's input is its single producer's output (the
// previous layer on the main path, the fork point at the start of a branch); a concat stacks channels of equal
// maps; an add sums equal shapes. Only the first layer reads the model input.
TEST_P(CoreModelZooEveryModel, ShapesChainThroughBranches) {
  const ModelSpec model = build_model(GetParam());
  std::map<std::string, Shape> produced;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const LayerSpec& layer = model.layers[i];
    SCOPED_TRACE(layer.name);
    EXPECT_EQ(produced.count(layer.name), 0u) << "duplicate layer name";
    if (i == 0) {
      EXPECT_TRUE(layer.inputs.empty());
      EXPECT_EQ(layer.input, model.input);
    } else {
      ASSERT_FALSE(layer.inputs.empty());
      for (const std::string& input : layer.inputs) ASSERT_EQ(produced.count(input), 1u) << "reads " << input;
      EXPECT_EQ(layer.input, produced.at(layer.inputs.front()));
    }
    if (layer.kind == LayerKind::kConcat) {
      std::int64_t channels = 0;
      for (const std::string& input : layer.inputs) {
        const Shape& part = produced.at(input);
        EXPECT_EQ(part.height, layer.output.height);
        EXPECT_EQ(part.width, layer.output.width);
        channels += part.channels;
      }
      EXPECT_EQ(channels, layer.output.channels);
      EXPECT_GE(layer.inputs.size(), 2u);
    } else if (layer.kind == LayerKind::kEltwiseAdd) {
      EXPECT_EQ(layer.inputs.size(), 2u);
      for (const std::string& input : layer.inputs) EXPECT_EQ(produced.at(input), layer.output);
    } else if (i > 0) {
      EXPECT_EQ(layer.inputs.size(), 1u);
    }
    produced[layer.name] = layer.output;
  }
  EXPECT_EQ(model.layers.back().kind, LayerKind::kSoftmax);
  EXPECT_EQ(model.layers.back().output, (Shape{model.classes, 1, 1}));
}

// The per-layer conventions of docs/models.md, checked on every layer of every model.
TEST_P(CoreModelZooEveryModel, LayersFollowTheConventions) {
  const ModelSpec model = build_model(GetParam());
  std::int64_t parameters = 0;
  std::int64_t bytes = 0;
  for (const LayerSpec& layer : model.layers) {
    SCOPED_TRACE(layer.name);
    EXPECT_EQ(layer.activation_bytes, 4 * layer.output.elements());
    parameters += layer.parameters;
    bytes += layer.activation_bytes;
    const double out = as_double(layer.output.elements());
    switch (layer.kind) {
      case LayerKind::kConvolution: {
        const std::int64_t fan_in = layer.input.channels / layer.groups * layer.kernel_h * layer.kernel_w;
        const std::int64_t weights = layer.output.channels * fan_in;
        // With or without bias (Caffe nets have one, BN nets do not).
        EXPECT_TRUE(layer.parameters == weights || layer.parameters == weights + layer.output.channels);
        EXPECT_DOUBLE_EQ(layer.forward_flops, 2.0 * as_double(fan_in) * out);
        break;
      }
      case LayerKind::kInnerProduct:
        EXPECT_EQ(layer.parameters, (layer.input.elements() + 1) * layer.output.channels);
        EXPECT_DOUBLE_EQ(layer.forward_flops, 2.0 * as_double(layer.input.elements() * layer.output.channels));
        break;
      case LayerKind::kMaxPool:
      case LayerKind::kAveragePool:
        EXPECT_EQ(layer.parameters, 0);
        EXPECT_EQ(layer.output.channels, layer.input.channels);
        EXPECT_DOUBLE_EQ(layer.forward_flops, as_double(layer.kernel_h * layer.kernel_w) * out);
        break;
      case LayerKind::kBatchNorm:
        EXPECT_EQ(layer.parameters, 2 * layer.output.channels);
        EXPECT_DOUBLE_EQ(layer.forward_flops, 2.0 * out);
        EXPECT_EQ(layer.input, layer.output);
        break;
      case LayerKind::kReLU:
      case LayerKind::kDropout:
        EXPECT_DOUBLE_EQ(layer.forward_flops, out);
        EXPECT_EQ(layer.input, layer.output);
        break;
      case LayerKind::kLocalResponseNorm:
        EXPECT_DOUBLE_EQ(layer.forward_flops, (2.0 * 5 + 4) * out);
        break;
      case LayerKind::kSoftmax:
        EXPECT_DOUBLE_EQ(layer.forward_flops, 3.0 * out);
        break;
      case LayerKind::kConcat:
        EXPECT_DOUBLE_EQ(layer.forward_flops, 0.0);
        break;
      case LayerKind::kEltwiseAdd:
        EXPECT_DOUBLE_EQ(layer.forward_flops, out);
        break;
    }
    if (layer.kind != LayerKind::kConvolution && layer.kind != LayerKind::kInnerProduct &&
        layer.kind != LayerKind::kBatchNorm) {
      EXPECT_EQ(layer.parameters, 0);
    }
  }
  EXPECT_EQ(model.parameters(), parameters);
  EXPECT_EQ(model.activation_bytes(), bytes);
  // Multiply-adds are the conv/fc share of the FLOPs; the rest (pooling, ReLU, BN, ...) is a few percent.
  EXPECT_GT(2 * model.forward_multiply_adds(), 0.9 * model.forward_flops());
  EXPECT_LT(2 * model.forward_multiply_adds(), model.forward_flops());
  EXPECT_GT(model.flops_per_parameter(), 0.0);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Zoo, CoreModelZooEveryModel, ::testing::ValuesIn(model_names()), test_name);

// --- against published figures ------------------------------------------------------------------------------------

// The models with a published parameter count, and those that also have a published multiply-add count.
std::vector<std::string> published_models(bool with_multiply_adds) {
  std::vector<std::string> names;
  for (const std::string& name : model_names()) {
    const PublishedTotals published = build_model(name).published;
    if (published.parameters > 0 && (!with_multiply_adds || published.forward_multiply_adds)) names.push_back(name);
  }
  return names;
}

class CoreModelZooPublishedParameters : public ::testing::TestWithParam<std::string> {};

// Parameter counts are exact integers in their sources; 1% leaves room only for rounding in the source.
TEST_P(CoreModelZooPublishedParameters, WithinOnePercent) {
  const ModelSpec model = build_model(GetParam());
  const double expected = as_double(model.published.parameters);
  EXPECT_NEAR(as_double(model.parameters()), expected, 0.01 * expected)
      << "expectation " << model.published.parameters << " from " << model.published.source;
}

INSTANTIATE_TEST_SUITE_P(Zoo, CoreModelZooPublishedParameters, ::testing::ValuesIn(published_models(false)), test_name);

class CoreModelZooPublishedMultiplyAdds : public ::testing::TestWithParam<std::string> {};

// Published multiply-add counts are rounded (to 2-4 significant figures) and their authors differ on what they
// include (bias adds, pooling, the classifier), while ours counts conv and fc multiply-adds exactly: 5% covers
// that. GoogLeNet gets 6%: the paper's 1.5 G is the sum of its Table 1 ops column, whose conv1 row says 34 M
// where a 7x7x3 -> 64 convolution on a 112x112 output is 118 M; with that row corrected the column sums to
// 1.586 G, within 0.3% of ours (docs/models.md).
TEST_P(CoreModelZooPublishedMultiplyAdds, WithinTolerance) {
  const ModelSpec model = build_model(GetParam());
  const double expected = *model.published.forward_multiply_adds;
  const double tolerance = model.name == "googlenet" ? 0.06 : 0.05;
  EXPECT_NEAR(model.forward_multiply_adds(), expected, tolerance * expected)
      << "expectation " << expected << " from " << model.published.source;
}

INSTANTIATE_TEST_SUITE_P(Zoo, CoreModelZooPublishedMultiplyAdds, ::testing::ValuesIn(published_models(true)),
                         test_name);

TEST(CoreModelZoo, PublishedFiguresCoverEveryModelButTheDesignedOnes) {
  EXPECT_EQ(published_models(false).size(), kExpectedNames.size() - 1);  // all but cifar10_alexnet
  EXPECT_EQ(published_models(true).size(), kExpectedNames.size() - 2);   // nor LeNet: no MAC count published
}

TEST(CoreModelZoo, OnlyTheDesignedCifarNetLacksAPublishedCount) {
  for (const std::string& name : model_names()) {
    EXPECT_EQ(build_model(name).published.parameters == 0, name == "cifar10_alexnet") << name;
  }
  const ModelSpec cifar = build_model("cifar10_alexnet");
  EXPECT_NE(cifar.published.source.find("249 MB"), std::string::npos) << cifar.published.source;
  EXPECT_FALSE(cifar.published.forward_multiply_adds.has_value());
}

// --- hand-checkable layers ----------------------------------------------------------------------------------------

TEST(CoreModelZoo, LeNetLayersByHand) {
  const ModelSpec lenet = build_model("lenet");
  EXPECT_EQ(lenet.input, (Shape{1, 28, 28}));
  const LayerSpec& conv1 = layer_named(lenet, "conv1");
  EXPECT_EQ(conv1.output, (Shape{20, 24, 24}));
  EXPECT_EQ(conv1.parameters, 20 * 5 * 5 + 20);  // 520
  EXPECT_DOUBLE_EQ(conv1.forward_flops, 2.0 * 20 * 24 * 24 * 25);
  EXPECT_EQ(conv1.activation_bytes, 20 * 24 * 24 * 4);
  const LayerSpec& pool1 = layer_named(lenet, "pool1");
  EXPECT_EQ(pool1.output, (Shape{20, 12, 12}));
  EXPECT_DOUBLE_EQ(pool1.forward_flops, 4.0 * 20 * 12 * 12);
  const LayerSpec& conv2 = layer_named(lenet, "conv2");
  EXPECT_EQ(conv2.output, (Shape{50, 8, 8}));
  EXPECT_EQ(conv2.parameters, 50 * 20 * 5 * 5 + 50);  // 25,050
  EXPECT_DOUBLE_EQ(conv2.forward_flops, 2.0 * 50 * 8 * 8 * 20 * 25);
  EXPECT_EQ(layer_named(lenet, "pool2").output, (Shape{50, 4, 4}));
  EXPECT_EQ(layer_named(lenet, "ip1").parameters, 800 * 500 + 500);
  EXPECT_EQ(layer_named(lenet, "ip2").parameters, 500 * 10 + 10);
  EXPECT_EQ(lenet.parameters(), 431080);
  EXPECT_DOUBLE_EQ(lenet.forward_multiply_adds(), 20.0 * 24 * 24 * 25 + 50.0 * 8 * 8 * 500 + 800.0 * 500 + 5000);
}

// The designed CIFAR-10 AlexNet: 5 conv + 3 fc as seed 000 §4.2 says, Caffe's ceil-mode pooling 32 -> 16 -> 8 -> 4,
// 10 classes, strictly sequential, every total checked by hand.
TEST(CoreModelZoo, Cifar10AlexNetStructureByHand) {
  const ModelSpec net = build_model("cifar10_alexnet");
  EXPECT_EQ(net.input, (Shape{3, 32, 32}));
  EXPECT_EQ(net.classes, 10);
  int convs = 0;
  int fcs = 0;
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const LayerSpec& layer = net.layers[i];
    if (layer.kind == LayerKind::kConvolution) ++convs;
    if (layer.kind == LayerKind::kInnerProduct) ++fcs;
    if (i > 0) {
      EXPECT_EQ(layer.input, net.layers[i - 1].output) << layer.name;
      EXPECT_EQ(layer.inputs, std::vector<std::string>{net.layers[i - 1].name}) << layer.name;
    }
  }
  EXPECT_EQ(convs, 5);
  EXPECT_EQ(fcs, 3);
  EXPECT_EQ(layer_named(net, "conv1").output, (Shape{96, 32, 32}));
  EXPECT_EQ(layer_named(net, "pool1").output, (Shape{96, 16, 16}));  // ceil((32-3)/2)+1; floor would give 15
  EXPECT_EQ(layer_named(net, "pool2").output, (Shape{256, 8, 8}));
  EXPECT_EQ(layer_named(net, "pool5").output, (Shape{256, 4, 4}));
  EXPECT_EQ(layer_named(net, "fc8").output, (Shape{10, 1, 1}));
  const std::int64_t expected = (96 * 3 * 25 + 96) + (256 * 96 * 25 + 256) + (384 * 256 * 9 + 384) +
                                (384 * 384 * 9 + 384) + (256 * 384 * 9 + 256) + (4096 * 4096 + 4096) +
                                (4096 * 4096 + 4096) + (4096 * 10 + 10);
  EXPECT_EQ(net.parameters(), expected);  // 37,323,146
  EXPECT_DOUBLE_EQ(layer_named(net, "conv2").forward_flops, 2.0 * 256 * 16 * 16 * 96 * 25);
}

TEST(CoreModelZoo, AlexNetGroupedConvolutionsByHand) {
  const ModelSpec alexnet = build_model("alexnet");
  const LayerSpec& conv1 = layer_named(alexnet, "conv1");
  EXPECT_EQ(conv1.output, (Shape{96, 55, 55}));
  EXPECT_EQ(conv1.parameters, 96 * 3 * 11 * 11 + 96);
  const LayerSpec& conv2 = layer_named(alexnet, "conv2");
  EXPECT_EQ(conv2.groups, 2);
  EXPECT_EQ(conv2.output, (Shape{256, 27, 27}));
  EXPECT_EQ(conv2.parameters, 256 * 48 * 5 * 5 + 256);  // each output channel sees half of the 96 inputs
  EXPECT_DOUBLE_EQ(conv2.forward_flops, 2.0 * 256 * 27 * 27 * 48 * 25);
  EXPECT_EQ(layer_named(alexnet, "pool5").output, (Shape{256, 6, 6}));
  EXPECT_EQ(layer_named(alexnet, "fc6").parameters, 256 * 6 * 6 * 4096 + 4096);
  EXPECT_EQ(alexnet.parameters(), 60965224);
}

TEST(CoreModelZoo, GoogLeNetInceptionModulesByHand) {
  const ModelSpec net = build_model("googlenet");
  EXPECT_EQ(layer_named(net, "conv1/7x7_s2").parameters, 64 * 3 * 49 + 64);
  EXPECT_EQ(layer_named(net, "pool2/3x3_s2").output, (Shape{192, 28, 28}));
  const LayerSpec& out3a = layer_named(net, "inception_3a/output");
  EXPECT_EQ(out3a.output, (Shape{64 + 128 + 32 + 32, 28, 28}));
  EXPECT_EQ(out3a.inputs, (std::vector<std::string>{"inception_3a/relu_1x1", "inception_3a/relu_3x3",
                                                    "inception_3a/relu_5x5", "inception_3a/relu_pool_proj"}));
  EXPECT_EQ(layer_named(net, "inception_3a/5x5").parameters, 32 * 16 * 25 + 32);
  EXPECT_EQ(layer_named(net, "inception_3a/3x3_reduce").inputs, std::vector<std::string>{"pool2/3x3_s2"});
  EXPECT_EQ(layer_named(net, "inception_5b/output").output, (Shape{1024, 7, 7}));
  EXPECT_EQ(layer_named(net, "loss3/classifier").parameters, 1024 * 1000 + 1000);
}

TEST(CoreModelZoo, VggFirstLayerByHand) {
  const ModelSpec vgg = build_model("vgg16");
  const LayerSpec& conv = layer_named(vgg, "conv1_1");
  EXPECT_EQ(conv.parameters, 64 * 3 * 9 + 64);
  EXPECT_DOUBLE_EQ(conv.forward_flops, 2.0 * 64 * 224 * 224 * 27);
  EXPECT_EQ(layer_named(vgg, "pool5").output, (Shape{512, 7, 7}));
  EXPECT_EQ(layer_named(build_model("vgg19"), "conv5_4").output, (Shape{512, 14, 14}));
}

TEST(CoreModelZoo, ResNetBottlenecksByHand) {
  const ModelSpec net = build_model("resnet50");
  EXPECT_EQ(layer_named(net, "conv1").parameters, 64 * 3 * 49);  // no bias: BN follows
  EXPECT_EQ(layer_named(net, "bn1").parameters, 2 * 64);
  EXPECT_EQ(layer_named(net, "maxpool").output, (Shape{64, 56, 56}));
  // The first block of stage 2 strides in its 3x3 and projects its shortcut.
  EXPECT_EQ(layer_named(net, "layer2.0.conv1").output, (Shape{128, 56, 56}));
  EXPECT_EQ(layer_named(net, "layer2.0.conv2").output, (Shape{128, 28, 28}));
  const LayerSpec& add = layer_named(net, "layer2.0.add");
  EXPECT_EQ(add.output, (Shape{512, 28, 28}));
  EXPECT_EQ(add.inputs, (std::vector<std::string>{"layer2.0.bn3", "layer2.0.downsample.1"}));
  EXPECT_EQ(layer_named(net, "layer2.0.downsample.0").parameters, 256 * 512);
  // Later blocks add the identity: the block's input, i.e. the previous block's final ReLU.
  EXPECT_EQ(layer_named(net, "layer2.1.add").inputs, (std::vector<std::string>{"layer2.1.bn3", "layer2.0.relu3"}));
  EXPECT_EQ(layer_named(net, "layer4.2.relu3").output, (Shape{2048, 7, 7}));
  EXPECT_EQ(layer_named(net, "fc").parameters, 2048 * 1000 + 1000);
  std::int64_t blocks = 0;
  for (const LayerSpec& layer : build_model("resnet101").layers) blocks += layer.kind == LayerKind::kEltwiseAdd;
  EXPECT_EQ(blocks, 3 + 4 + 23 + 3);
  blocks = 0;
  for (const LayerSpec& layer : build_model("resnet152").layers) blocks += layer.kind == LayerKind::kEltwiseAdd;
  EXPECT_EQ(blocks, 3 + 8 + 36 + 3);
}

TEST(CoreModelZoo, InceptionV3GridsByHand) {
  const ModelSpec net = build_model("inception_v3");
  EXPECT_EQ(layer_named(net, "Conv2d_1a_3x3.conv").output, (Shape{32, 149, 149}));
  EXPECT_EQ(layer_named(net, "Conv2d_1a_3x3.conv").parameters, 32 * 3 * 9);
  EXPECT_EQ(layer_named(net, "maxpool2").output, (Shape{192, 35, 35}));
  EXPECT_EQ(layer_named(net, "Mixed_5b.concat").output, (Shape{256, 35, 35}));
  EXPECT_EQ(layer_named(net, "Mixed_6a.concat").output, (Shape{768, 17, 17}));
  const LayerSpec& seven = layer_named(net, "Mixed_6b.branch7x7_2.conv");  // 1x7, padding (0, 3)
  EXPECT_EQ(seven.kernel_h, 1);
  EXPECT_EQ(seven.kernel_w, 7);
  EXPECT_EQ(seven.output, (Shape{128, 17, 17}));
  EXPECT_EQ(seven.parameters, 128 * 128 * 7);
  EXPECT_EQ(layer_named(net, "Mixed_7a.concat").output, (Shape{1280, 8, 8}));
  EXPECT_EQ(layer_named(net, "Mixed_7c.concat").output, (Shape{2048, 8, 8}));
  EXPECT_EQ(layer_named(net, "fc").parameters, 2048 * 1000 + 1000);
}

}  // namespace
}  // namespace dsgd
