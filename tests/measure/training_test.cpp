#include "measure/training.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"

namespace dsgd::measure {
namespace {

bool fashion_mnist_installed() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

// A run of `iterations` on one thread: two OpenMP threads crawl when ctest runs other tests beside this one
// (docs/nn.md).
TrainOptions one_thread_run(int iterations, int eval_every) {
  TrainOptions options;
  options.iterations = iterations;
  options.eval_every = eval_every;
  options.threads = 1;
  return options;
}

// A short convergence check on the real data (the >= 89% run is a benchmark: `dsgd train`, in the report).
TEST(MeasureTraining, LenetLearnsFashionMnistInAFewHundredIterations) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const TrainOptions options = one_thread_run(300, 150);
  const TrainResult result = train(options);
  ASSERT_EQ(result.curve.size(), 2U);
  EXPECT_EQ(result.iterations, 300);
  EXPECT_EQ(result.test_images, 10000);
  // Random guessing is 10%; 300 momentum-SGD steps of batch 64 reach ~80% (seed 1).
  EXPECT_GT(result.curve.back().test_accuracy, 0.70);
  EXPECT_LT(result.curve.back().train_loss, result.curve.front().train_loss);
  EXPECT_GT(result.breakdown[Category::kForwardBackward], 0);
  EXPECT_GT(result.breakdown[Category::kCpuGpuData], 0);
  EXPECT_EQ(result.stop_reason, "iterations");
}

TEST(MeasureTraining, SameSeedGivesTheSameCurve) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const TrainOptions options = one_thread_run(40, 20);
  const TrainResult first = train(options);
  const TrainResult second = train(options);
  ASSERT_EQ(first.curve.size(), second.curve.size());
  for (std::size_t i = 0; i < first.curve.size(); ++i) {
    EXPECT_EQ(first.curve[i].test_accuracy, second.curve[i].test_accuracy);
    EXPECT_EQ(first.curve[i].train_loss, second.curve[i].train_loss);
  }
}

TEST(MeasureTraining, BadOptionsAreInputErrors) {
  TrainOptions options;
  EXPECT_THROW(train(options), InputError) << "no budget";
  options.iterations = 1;
  options.batch = 0;
  EXPECT_THROW(train(options), InputError);
  options.batch = 8;
  options.model = "resnet5";
  EXPECT_THROW(train(options), UnknownNameError);
  options.model = "lenet";
  options.dataset = "imagenet";
  EXPECT_THROW(train(options), UnknownNameError);
  options.dataset = "fashion-mnist";
  options.backend = "tpu";
  if (fashion_mnist_installed()) {
    EXPECT_THROW(train(options), UnknownNameError);
  }
}

}  // namespace
}  // namespace dsgd::measure

namespace dsgd::measure {
namespace {

// The entry holds the last evaluation, the hash in hex, the breakdown and the curves (no loss before iteration 1).
TEST(MeasureTraining, TheEntryHoldsTheLastEvaluationAndTheCurves) {
  TrainOptions options;
  TrainResult result;
  result.curve = {{0, 0, 0.1, 2.3, 0}, {100, 4.0, 0.8, 0.6, 0.7}};
  result.iterations = 100;
  result.train_seconds = 4.0;
  result.time_to_target_s = -1;
  result.breakdown.add(Category::kForwardBackward, 3.5);
  result.stop_reason = "iterations";
  result.parameters_hash = 0xabcdef;
  const auto entry = to_entry(options, result);
  EXPECT_DOUBLE_EQ(entry.counters.at("test_accuracy"), 0.8);
  EXPECT_DOUBLE_EQ(entry.counters.at("train_loss"), 0.7);
  EXPECT_EQ(entry.counters.count("time_to_target_s"), 0U) << "the target was not reached";
  EXPECT_EQ(entry.labels.at("parameters_fnv1a"), "0000000000abcdef");
  EXPECT_DOUBLE_EQ(entry.breakdown_s.at("for/backward"), 3.5);
  ASSERT_EQ(entry.curves.size(), 3U);
  EXPECT_EQ(entry.curves[1].points.back(), std::make_pair(100.0, 0.8));
  EXPECT_EQ(entry.curves[2].points.size(), 1U);
}

}  // namespace
}  // namespace dsgd::measure
