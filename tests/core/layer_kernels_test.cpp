// core/layer_kernels.hpp: every layer's forward, backward-data and backward-weights kernels with their GEMM
// shapes; the FLOPs add up to the zoo's totals and each GEMM's m x n x k to its kernel's FLOPs.

#include "core/layer_kernels.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd {
namespace {

bool gemm_like(LayerKind kind) { return kind == LayerKind::kConvolution || kind == LayerKind::kInnerProduct; }

TEST(CoreLayerKernels, EveryZooModelAddsUpToItsForwardFlops) {
  constexpr std::int64_t kBatch = 8;
  for (const std::string& name : model_names()) {
    SCOPED_TRACE(name);
    const ModelSpec model = build_model(name);
    const auto kernels = iteration_kernels(model, kBatch);
    double forward = 0;
    double backward = 0;
    double expected_backward = 0;
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
      const LayerSpec& layer = model.layers[i];
      const double per_pass = kBatch * layer.forward_flops;
      if (layer.inputs.empty()) {
        expected_backward += gemm_like(layer.kind) ? per_pass : 0;  // only the weights' gradient
      } else {
        expected_backward += gemm_like(layer.kind) ? 2 * per_pass : per_pass;
      }
    }
    for (const LayerKernel& kernel : kernels) {
      (kernel.pass == KernelPass::kForward ? forward : backward) += kernel.flops;
      EXPECT_GT(kernel.bytes, 0);
      if (kernel.gemm) {
        EXPECT_DOUBLE_EQ(kernel.gemm->flops(), kernel.flops) << model.layers[kernel.layer].name;
      }
      EXPECT_EQ(kernel.gemm.has_value(), gemm_like(model.layers[kernel.layer].kind));
    }
    EXPECT_NEAR(forward, kBatch * model.forward_flops(), 1e-9 * forward);
    EXPECT_NEAR(backward, expected_backward, 1e-9 * backward);
  }
}

TEST(CoreLayerKernels, LenetsConvolutionsAndInnerProductsAsGemms) {
  const ModelSpec lenet = build_model("lenet");
  // conv1: 20 filters of 1x5x5 over 24x24 outputs; it reads the model input, so it passes no gradient back.
  const auto conv1 = layer_kernels(lenet, 0, 8);
  ASSERT_EQ(conv1.size(), 2U);
  EXPECT_EQ(conv1[0].pass, KernelPass::kForward);
  EXPECT_EQ(*conv1[0].gemm, (GemmShape{8 * 24 * 24, 20, 25, 1}));
  EXPECT_EQ(conv1[1].pass, KernelPass::kBackwardWeights);
  EXPECT_EQ(*conv1[1].gemm, (GemmShape{20, 25, 8 * 24 * 24, 1}));
  // Forward bytes: the 8 inputs, the 520 weights and the 8 outputs, once each.
  EXPECT_DOUBLE_EQ(conv1[0].bytes, 4.0 * (8 * 28 * 28 + 520 + 8 * 20 * 24 * 24));
  // conv2: 50 filters of 20x5x5 over 8x8; col2im's GEMM for the input's gradient.
  const auto conv2 = layer_kernels(lenet, 2, 8);
  ASSERT_EQ(conv2.size(), 3U);
  EXPECT_EQ(*conv2[0].gemm, (GemmShape{8 * 64, 50, 500, 1}));
  EXPECT_EQ(*conv2[1].gemm, (GemmShape{500, 8 * 64, 50, 1}));
  EXPECT_EQ(*conv2[2].gemm, (GemmShape{50, 500, 8 * 64, 1}));
  // ip1: 800 -> 500.
  const auto ip1 = layer_kernels(lenet, 4, 8);
  ASSERT_EQ(ip1.size(), 3U);
  EXPECT_EQ(*ip1[0].gemm, (GemmShape{8, 500, 800, 1}));
  EXPECT_EQ(*ip1[1].gemm, (GemmShape{8, 800, 500, 1}));
  EXPECT_EQ(*ip1[2].gemm, (GemmShape{500, 800, 8, 1}));
  // relu1 streams: forward reads and writes 500 floats per image; backward reads dY and X and writes dX.
  const auto relu1 = layer_kernels(lenet, 5, 8);
  ASSERT_EQ(relu1.size(), 2U);
  EXPECT_FALSE(relu1[0].gemm);
  EXPECT_DOUBLE_EQ(relu1[0].bytes, 4.0 * 8 * (500 + 500));
  EXPECT_DOUBLE_EQ(relu1[1].bytes, 4.0 * 8 * (500 + 2 * 500));
}

TEST(CoreLayerKernels, AGroupedConvolutionIsOneGemmPerGroup) {
  const ModelSpec alexnet = build_model("alexnet");
  // conv2: 256 filters of 96/2 x 5x5 in 2 groups over 27x27.
  const auto conv2 = layer_kernels(alexnet, 4, 2);
  EXPECT_EQ(*conv2[0].gemm, (GemmShape{2 * 27 * 27, 128, 48 * 25, 2}));
}

TEST(CoreLayerKernels, Only3x3ConvolutionsOfStride1HaveWinogradForms) {
  const ModelSpec vgg = build_model("vgg16");
  std::size_t conv1_2 = 0;
  while (vgg.layers[conv1_2].name != "conv1_2") ++conv1_2;
  const auto kernels = layer_kernels(vgg, conv1_2, 2);
  ASSERT_EQ(kernels.size(), 3U);
  for (const LayerKernel& kernel : kernels) ASSERT_TRUE(kernel.winograd) << to_string(kernel.pass);
  // F(2x2, 3x3) on the 224 x 224 output: 112 x 112 tiles per image, 16 GEMMs of 64 channels by 64.
  EXPECT_EQ(kernels[0].winograd->gemm(2), (GemmShape{2 * 112 * 112, 64, 64, 16}));
  EXPECT_EQ(kernels[1].winograd->gemm(2), (GemmShape{2 * 112 * 112, 64, 64, 16})) << "backward-data";
  EXPECT_EQ(kernels[2].winograd->gemm(4), (GemmShape{64, 64, 2 * 56 * 56, 36})) << "backward-weights";
  // ResNet-50's stride-2 3x3, its 1x1s and every inner product have none.
  const ModelSpec resnet = build_model("resnet50");
  for (std::size_t layer = 0; layer < resnet.layers.size(); ++layer) {
    const LayerSpec& spec = resnet.layers[layer];
    const bool eligible = spec.kind == LayerKind::kConvolution && spec.kernel_h == 3 && spec.stride == 1;
    for (const LayerKernel& kernel : layer_kernels(resnet, layer, 1)) {
      EXPECT_EQ(kernel.winograd.has_value(), eligible) << spec.name;
    }
  }
}

// A library that lowers a convolution to a GEMM builds (or scatters back) a column matrix of patch x output pixels
// in every pass; a 1x1 convolution of stride 1 without padding reads its input as that matrix.
TEST(CoreLayerKernels, AConvolutionsColumnMatrixIsItsPatchTimesItsOutputPixels) {
  const ModelSpec lenet = build_model("lenet");
  for (const LayerKernel& kernel : layer_kernels(lenet, 2, 8)) {
    EXPECT_EQ(kernel.lowered_elements, 500 * 8 * 64) << "conv2, " << to_string(kernel.pass);
  }
  for (const LayerKernel& kernel : layer_kernels(lenet, 4, 8)) EXPECT_EQ(kernel.lowered_elements, 0) << "ip1";
  const ModelSpec alexnet = build_model("alexnet");
  EXPECT_EQ(layer_kernels(alexnet, 4, 2)[0].lowered_elements, 96 * 25 * 2 * 27 * 27) << "both groups' columns";
  const ModelSpec resnet = build_model("resnet50");
  for (std::size_t layer = 0; layer < resnet.layers.size(); ++layer) {
    const LayerSpec& spec = resnet.layers[layer];
    if (spec.kind != LayerKind::kConvolution) continue;
    const bool pointwise = spec.kernel_h == 1 && spec.stride == 1 && spec.pad_h == 0;
    EXPECT_EQ(layer_kernels(resnet, layer, 1)[0].lowered_elements == 0, pointwise) << spec.name;
  }
}

TEST(CoreLayerKernels, AnIterationRunsForwardsThenBackwardsLastLayerFirst) {
  const ModelSpec lenet = build_model("lenet");
  const auto kernels = iteration_kernels(lenet, 4);
  ASSERT_FALSE(kernels.empty());
  std::size_t forwards = 0;
  while (forwards < kernels.size() && kernels[forwards].pass == KernelPass::kForward) {
    EXPECT_EQ(kernels[forwards].layer, forwards);
    ++forwards;
  }
  EXPECT_EQ(forwards, lenet.layers.size());
  EXPECT_EQ(kernels[forwards].layer, lenet.layers.size() - 1) << "the loss layer's gradient first";
  EXPECT_EQ(kernels.back().layer, 0U);
  EXPECT_EQ(kernels.back().pass, KernelPass::kBackwardWeights);
}

TEST(CoreLayerKernels, ABatchBelowOneOrALayerPastTheEndIsAnInputError) {
  const ModelSpec lenet = build_model("lenet");
  EXPECT_EQ(testing::input_error([&] { layer_kernels(lenet, 0, 0); }), "layer kernels: batch 0 is not >= 1");
  EXPECT_EQ(testing::input_error([&] { layer_kernels(lenet, 8, 1); }), "layer kernels: lenet has 8 layers, no layer 8");
}

}  // namespace
}  // namespace dsgd
