#include "simulate/transformer_training.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "platforms/catalog.hpp"

namespace dsgd::simulate {
namespace {

ParallelLayout layout(int tp, int pp, int dp, std::int64_t micro_batch, std::int64_t batch) {
  ParallelLayout out;
  out.tensor_parallel = tp;
  out.pipeline_parallel = pp;
  out.data_parallel = dp;
  out.micro_batch = micro_batch;
  out.global_batch = batch;
  return out;
}

TEST(TransformerTraining, RefusesAStageThatDoesNotFitWithTheEstimateAndTheLimit) {
  const auto selene = platforms::load_platform("selene");
  // 145.6B on 8 pipeline stages without tensor parallelism: 18 B parameters a GPU, 16 bytes each.
  const auto model = build_transformer("gpt-145.6b");
  try {
    predict_transformer(model, layout(1, 8, 1, 1, 64), selene);
    FAIL() << "expected a refusal";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("gpt-145.6b"), std::string::npos) << message;
    EXPECT_NE(message.find("stage 0 needs"), std::string::npos) << message;
    EXPECT_NE(message.find("GiB per GPU"), std::string::npos) << message;
    EXPECT_NE(message.find("has 80.0 GiB"), std::string::npos) << message;
  }
  // Sharding the optimizer state over 64 replicas (ZeRO-1) with tensor parallelism brings it under.
  auto sharded = layout(8, 8, 16, 1, 512);
  sharded.zero_stage = 1;
  EXPECT_NO_THROW(predict_transformer(model, sharded, selene));
}

TEST(TransformerTraining, MemoryFollowsZeroStagesAndRecomputation) {
  const auto selene = platforms::load_platform("selene");
  const auto model = build_transformer("gpt-7.5b");
  auto base = layout(4, 1, 8, 4, 64);
  const auto replicated = predict_transformer(model, base, selene).memory.front();
  EXPECT_DOUBLE_EQ(replicated.optimizer, 12 * replicated.parameters);
  for (int stage = 1; stage <= 3; ++stage) {
    auto zero = base;
    zero.zero_stage = stage;
    const auto memory = predict_transformer(model, zero, selene).memory.front();
    EXPECT_DOUBLE_EQ(memory.optimizer, replicated.optimizer / 8);
    EXPECT_DOUBLE_EQ(memory.gradients, stage >= 2 ? replicated.gradients / 8 : replicated.gradients);
    EXPECT_DOUBLE_EQ(memory.weights, stage >= 3 ? replicated.weights / 8 : replicated.weights);
  }
  auto none = base;
  none.recomputation = Recomputation::kNone;
  EXPECT_GT(predict_transformer(model, none, selene, false).memory.front().activations, replicated.activations * 5);
}

TEST(TransformerTraining, PipelineBubbleShrinksWithInterleaving) {
  const auto selene = platforms::load_platform("selene");
  const auto model = build_transformer("gpt-145.6b");
  auto plain = layout(8, 8, 1, 1, 16);
  auto interleaved = plain;
  interleaved.schedule = algorithms::PipelineSchedule::kInterleaved;
  interleaved.virtual_stages = 2;
  const auto a = predict_transformer(model, plain, selene);
  const auto b = predict_transformer(model, interleaved, selene);
  EXPECT_NEAR(a.bubble_fraction, 7.0 / 16, 0.05);
  EXPECT_LT(b.bubble_fraction, a.bubble_fraction * 0.7);
  EXPECT_LT(b.iteration_s, a.iteration_s);
}

TEST(TransformerTraining, TensorParallelismAcrossNodesCostsMore) {
  const auto selene = platforms::load_platform("selene");
  const auto model = build_transformer("gpt-39.1b");
  const auto inside = predict_transformer(model, layout(8, 2, 1, 1, 8), selene);
  const auto across = predict_transformer(model, layout(16, 1, 1, 1, 8), selene);
  EXPECT_GT(across.tensor_parallel_s, inside.tensor_parallel_s);
}

TEST(TransformerTraining, RefusesLayoutsThatDoNotSplit) {
  const auto selene = platforms::load_platform("selene");
  const auto model = build_transformer("gpt-1.7b");                                         // 24 layers
  EXPECT_THROW(predict_transformer(model, layout(1, 5, 1, 1, 5), selene), InputError);      // 24 layers on 5 stages
  EXPECT_THROW(predict_transformer(model, layout(1, 1, 3, 2, 8), selene), InputError);      // 8 sequences on 3 x 2
  EXPECT_THROW(predict_transformer(model, layout(8, 8, 100, 1, 800), selene), InputError);  // 6,400 GPUs
  EXPECT_THROW(predict_transformer(model, layout(1, 1, 1, 1, 1), platforms::load_platform("cori-knl")),
               InputError);  // no GPU kernels
}

}  // namespace
}  // namespace dsgd::simulate
