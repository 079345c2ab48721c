#include "core/transformer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"

namespace dsgd {
namespace {

const char* const kTable1[] = {"gpt-1.7b",  "gpt-3.6b",   "gpt-7.5b",   "gpt-18.4b",  "gpt-39.1b",
                               "gpt-76.1b", "gpt-145.6b", "gpt-310.1b", "gpt-529.6b", "gpt-1008b"};

TEST(Transformer, Table1ParametersRoundToThePublishedFigures) {
  for (const char* name : kTable1) {
    const TransformerSpec model = build_transformer(name);
    // Published to 0.1 B: the count is within half of that.
    EXPECT_LE(std::abs(static_cast<double>(model.parameters() - model.published_parameters)), 0.05e9) << name;
  }
}

TEST(Transformer, OtherFamiliesMatchTheirPublishedSizes) {
  // Llama 2's counts are exact in its release (6.74B, 68.98B); BERT's paper rounds (110M, 340M) and its pooler and
  // token-type embeddings are not modelled.
  EXPECT_NEAR(static_cast<double>(build_transformer("llama2-7b").parameters()) / 6.74e9, 1, 0.005);
  EXPECT_NEAR(static_cast<double>(build_transformer("llama2-70b").parameters()) / 68.98e9, 1, 0.005);
  EXPECT_NEAR(static_cast<double>(build_transformer("gpt2-small").parameters()) / 124.4e6, 1, 0.005);
  EXPECT_NEAR(static_cast<double>(build_transformer("bert-base").parameters()) / 110e6, 1, 0.02);
  EXPECT_NEAR(static_cast<double>(build_transformer("bert-large").parameters()) / 340e6, 1, 0.02);
}

TEST(Transformer, IterationFlopsAgreeWithMegatronsClosedForms) {
  for (const char* name : kTable1) {
    const TransformerSpec model = build_transformer(name);
    for (const bool recompute : {true, false}) {
      const double ours = transformer_iteration_flops(model, 512, recompute);
      EXPECT_NEAR(ours / megatron_iteration_flops(model, 512, recompute), 1, 0.01) << name << " " << recompute;
    }
    // Full recomputation adds one forward pass of the blocks: a third of the rest, less the output layer's share.
    EXPECT_GT(transformer_iteration_flops(model, 512, true), transformer_iteration_flops(model, 512, false) * 1.3);
  }
}

TEST(Transformer, TensorParallelismSplitsTheBlocksProducts) {
  const TransformerSpec model = build_transformer("gpt-18.4b");
  double whole = 0;
  double share = 0;
  for (const auto& kernel : transformer_block_kernels(model, 2, 1)) whole += kernel.flops;
  for (const auto& kernel : transformer_block_kernels(model, 2, 8)) share += kernel.flops;
  EXPECT_NEAR(share * 8 / whole, 1, 1e-12);
  // The forward's products: 24 b s h^2 + 4 b s^2 h.
  double forward = 0;
  for (const auto& kernel : transformer_block_kernels(model, 2, 1)) {
    if (kernel.pass == KernelPass::kForward) forward += kernel.flops;
  }
  const double b = 2, s = 2048, h = 6144;
  EXPECT_DOUBLE_EQ(forward, 24 * b * s * h * h + 4 * b * s * s * h);
}

TEST(Transformer, ActivationBytesAreKorthikantisTable2) {
  const TransformerSpec model = build_transformer("gpt-145.6b");
  const double s = 2048, b = 2, h = 12288, a = 96;
  for (const int t : {1, 8}) {
    const double sbh = s * b * h;
    EXPECT_DOUBLE_EQ(block_activation_bytes(model, 2, t, Recomputation::kNone),
                     sbh * (10 + 24.0 / t + 5 * a * s / (h * t)));
    EXPECT_DOUBLE_EQ(block_activation_bytes(model, 2, t, Recomputation::kNone, true),
                     sbh * (34.0 / t + 5 * a * s / (h * t)));
    EXPECT_DOUBLE_EQ(block_activation_bytes(model, 2, t, Recomputation::kSelective), sbh * (10 + 24.0 / t));
    EXPECT_DOUBLE_EQ(block_activation_bytes(model, 2, t, Recomputation::kSelective, true), sbh * 34 / t);
    EXPECT_DOUBLE_EQ(block_activation_bytes(model, 2, t, Recomputation::kFull), 2 * sbh);
  }
}

TEST(Transformer, LlamaHasNoDropoutAndFewerKeyValueHeads) {
  const TransformerSpec model = build_transformer("llama2-70b");
  EXPECT_EQ(model.kv_heads, 8);
  double qkv_n = 0;
  bool dropout = false;
  for (const auto& kernel : transformer_block_kernels(model, 1, 8)) {
    if (kernel.layer_name == "attention.qkv" && kernel.pass == KernelPass::kForward)
      qkv_n = static_cast<double>(kernel.gemm->n);
    dropout = dropout || kernel.layer_name == "attention.dropout";
  }
  EXPECT_EQ(qkv_n, (64 + 2 * 8) * 128 / 8);
  EXPECT_FALSE(dropout);
}

TEST(Transformer, RefusesASplitThatDoesNotDivide) {
  const TransformerSpec model = build_transformer("gpt-1.7b");  // 24 heads
  EXPECT_THROW(transformer_block_kernels(model, 1, 16), InputError);
  EXPECT_THROW(transformer_block_kernels(model, 0, 1), InputError);
  EXPECT_THROW(build_transformer("gpt-2t"), InputError);
}

}  // namespace
}  // namespace dsgd
