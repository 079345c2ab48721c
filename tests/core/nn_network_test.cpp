// Networks and SGD on every back end: the packed layout, deterministic initialisation, bit-identical training
// runs, a LeNet that overfits four images, a test-set evaluation split over evaluators, and the update rules on
// exact small integers.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/data/dataset.hpp"
#include "core/error.hpp"
#include "core/nn/evaluation.hpp"
#include "core/nn/network.hpp"
#include "core/nn/sgd.hpp"
#include "tests/core/nn_test_support.hpp"

namespace dsgd::nn::test {
namespace {

// One CPU thread for speed on tiny batches (see nn_layers_test.cpp); the determinism test makes its own
// two-thread back end, where reductions are split between threads.
class NnNetwork : public BackendTest {
 protected:
  NnNetwork() { threads_ = 1; }
};

std::vector<float> download(Backend& backend, const float* data, std::size_t count) {
  std::vector<float> host(count);
  backend.copy_to_host(host.data(), data, count);
  backend.synchronize();
  return host;
}

TEST_P(NnNetwork, PackedLayoutCoversTheBufferInLayerOrder) {
  const ModelSpec model = build_model("lenet");
  Network network(model, backend(), 2);
  const std::vector<ParameterSlice>& layout = network.layout();
  ASSERT_EQ(layout.size(), model.layers.size() - 1) << "every layer but the softmax loss";
  std::size_t next = 0;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    EXPECT_EQ(layout[i].layer, model.layers[i].name);
    EXPECT_EQ(layout[i].offset, next) << layout[i].layer;
    EXPECT_EQ(layout[i].count, static_cast<std::size_t>(model.layers[i].parameters)) << layout[i].layer;
    next += layout[i].count;
  }
  EXPECT_EQ(next, network.parameter_count());
  EXPECT_EQ(network.parameter_count(), static_cast<std::size_t>(model.parameters()));
  EXPECT_EQ(network.parameter_count(), 431080U);  // Caffe's LeNet (model zoo)
}

TEST_P(NnNetwork, InitialisationIsXavierDeterministicAndZeroBiased) {
  const ModelSpec model = build_model("lenet");
  Network a(model, backend(), 1), b(model, backend(), 1);
  a.initialize(42);
  b.initialize(42);
  const std::vector<float> first = download(backend(), a.parameters(), a.parameter_count());
  EXPECT_EQ(first, download(backend(), b.parameters(), b.parameter_count())) << "same seed: bit-identical";
  b.initialize(43);
  EXPECT_NE(first, download(backend(), b.parameters(), b.parameter_count()));

  for (const ParameterSlice& slice : a.layout()) {
    const LayerSpec& spec = *std::find_if(model.layers.begin(), model.layers.end(),
                                          [&](const LayerSpec& l) { return l.name == slice.layer; });
    if (slice.count == 0) continue;
    const std::size_t biases = static_cast<std::size_t>(spec.output.channels);
    const double fan_in =
        static_cast<double>(spec.kind == LayerKind::kConvolution ? spec.input.channels * spec.kernel_h * spec.kernel_w
                                                                 : spec.input.elements());
    const double fan_out =
        static_cast<double>(spec.kind == LayerKind::kConvolution ? spec.output.channels * spec.kernel_h * spec.kernel_w
                                                                 : spec.output.elements());
    const double limit = std::sqrt(6.0 / (fan_in + fan_out));
    double sum_squares = 0;
    const std::size_t weights = slice.count - biases;
    for (std::size_t i = 0; i < weights; ++i) {
      const float w = first[slice.offset + i];
      ASSERT_LE(std::fabs(w), limit) << slice.layer;
      sum_squares += static_cast<double>(w) * w;
    }
    // Uniform on [-limit, limit] has variance limit^2 / 3.
    EXPECT_NEAR(sum_squares / static_cast<double>(weights), limit * limit / 3, 0.1 * limit * limit / 3) << slice.layer;
    for (std::size_t i = weights; i < slice.count; ++i) EXPECT_EQ(first[slice.offset + i], 0.0f) << slice.layer;
  }
}

// LeNet on 4 random images with 4 labels: a training set it can memorise.
struct TinySet {
  std::vector<float> images = random_values(std::size_t{4} * 28 * 28, 5);
  std::vector<float> labels = {0, 1, 2, 3};
};

TEST_P(NnNetwork, LenetOverfitsFourImages) {
  const TinySet data;
  Network network(build_model("lenet"), backend(), 4);
  network.initialize(1);
  DeviceBuffer images(backend(), data.images), labels(backend(), data.labels);
  Sgd sgd(backend(), network.parameter_count(), {.learning_rate = 0.05f, .momentum = 0.9f});
  double first_loss = 0, loss = 0;
  int steps = 0;
  for (; steps < 40; ++steps) {
    loss = network.train_step(images.get(), labels.get());
    if (steps == 0) first_loss = loss;
    sgd.step(network.parameters(), network.gradients());
    if (network.evaluate(images.get(), labels.get()) == 4 && loss < 0.05) break;
  }
  EXPECT_NEAR(first_loss, std::log(10.0), 0.5) << "an untrained net guesses about uniformly";
  double loss_sum = 0;
  EXPECT_EQ(network.evaluate(images.get(), labels.get(), &loss_sum), 4) << "after " << steps << " steps";
  EXPECT_LT(loss_sum / 4, 0.1) << "after " << steps << " steps (first loss " << first_loss << ")";
}

TEST_P(NnNetwork, TrainingIsBitIdenticalForTheSameSeed) {
  const TinySet data;
  BackendOptions options;
  options.threads = 2;
  const std::unique_ptr<Backend> two_threads = make_backend(GetParam(), options);
  Backend& backend = *two_threads;
  auto run = [&]() {
    Network network(build_model("lenet"), backend, 4);
    network.initialize(3);
    DeviceBuffer images(backend, data.images), labels(backend, data.labels);
    Sgd sgd(backend, network.parameter_count(), {.learning_rate = 0.01f, .momentum = 0.9f, .weight_decay = 5e-4f});
    std::vector<double> losses;
    for (int step = 0; step < 3; ++step) {
      losses.push_back(network.train_step(images.get(), labels.get()));
      sgd.step(network.parameters(), network.gradients());
    }
    return std::make_pair(losses, download(backend, network.parameters(), network.parameter_count()));
  };
  const auto first = run();
  const auto second = run();
  EXPECT_EQ(first.first, second.first);
  EXPECT_TRUE(first.second == second.second) << "parameters differ after 3 steps";
}

// The test set split over evaluators, run in turn or on threads side by side, gives the bits of one evaluator
// going through every batch; a batch that does not divide the test set is refused.
TEST_P(NnNetwork, EvaluationSplitOverEvaluatorsGivesOneEvaluatorsBits) {
  data::Dataset test;
  test.name = "random";
  test.channels = 1;
  test.height = test.width = 28;
  test.classes = 10;
  const auto pixels = random_values(std::size_t{40} * 28 * 28, 11);
  test.images.assign(pixels.begin(), pixels.end());
  for (int i = 0; i < 40; ++i) test.labels.push_back(i % 10);
  const ModelSpec model = build_model("lenet");
  Network one(model, backend(), 8);
  one.initialize(2);
  const Evaluation reference = evaluate(one, test);
  EXPECT_GT(reference.loss, 0);

  BackendOptions options;
  options.threads = 1;
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::unique_ptr<Network>> networks;
  std::vector<Network*> evaluators;
  for (int k = 0; k < 3; ++k) {
    backends.push_back(make_backend(GetParam(), options));
    networks.push_back(std::make_unique<Network>(model, *backends.back(), 8));
    networks.back()->initialize(2);
    evaluators.push_back(networks.back().get());
  }
  const SideBySide in_turn = [](std::span<const std::function<void()>> parts) {
    for (const auto& part : parts) part();
  };
  const SideBySide on_threads = [](std::span<const std::function<void()>> parts) {
    std::vector<std::thread> threads;
    for (const auto& part : parts) threads.emplace_back(part);
    for (auto& thread : threads) thread.join();
  };
  for (const SideBySide& run : {in_turn, on_threads}) {
    const Evaluation split = evaluate(evaluators, test, run);
    EXPECT_EQ(split.accuracy, reference.accuracy);
    EXPECT_EQ(split.loss, reference.loss);  // the batches' losses added in batch order, as one evaluator adds them
  }
  Network odd(model, backend(), 7);
  EXPECT_THROW(evaluate(odd, test), InputError);
}

TEST_P(NnNetwork, LayerByLayerBackwardReportsEachFinalLayerFromTheLast) {
  // Wait-free backpropagation reads a layer's gradients as soon as it is reported: they must be final then, and
  // the pass must give train_step's loss and gradients bit for bit.
  const TinySet data;
  DeviceBuffer images(backend(), data.images), labels(backend(), data.labels);
  Network whole(build_model("lenet"), backend(), 4);
  Network by_layer(build_model("lenet"), backend(), 4);
  whole.initialize(5);
  by_layer.initialize(5);
  const double loss = whole.train_step(images.get(), labels.get());
  const std::vector<float> expected = download(backend(), whole.gradients(), whole.parameter_count());
  std::vector<std::size_t> order;
  const double layered_loss = by_layer.train_step(images.get(), labels.get(), [&](std::size_t layer) {
    order.push_back(layer);
    const ParameterSlice& slice = by_layer.layout().at(layer);
    const std::vector<float> now = download(backend(), by_layer.gradients() + slice.offset, slice.count);
    EXPECT_TRUE(std::equal(now.begin(), now.end(), expected.begin() + static_cast<std::ptrdiff_t>(slice.offset)))
        << "layer " << slice.layer << "'s gradients changed after it was reported";
  });
  EXPECT_EQ(layered_loss, loss);
  ASSERT_EQ(order.size(), by_layer.layer_count());
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], order.size() - 1 - i);
  EXPECT_TRUE(download(backend(), by_layer.gradients(), by_layer.parameter_count()) == expected);
}

TEST_P(NnNetwork, CifarAlexnetTrainsAStepWithLrnAndDropout) {
  // The seed's CIFAR network at batch 2: every layer kind a sequential zoo model uses, one step.
  const ModelSpec model = build_model("cifar10_alexnet");
  Network network(model, backend(), 2);
  network.initialize(9);
  DeviceBuffer images(backend(), random_values(std::size_t{2} * 3 * 32 * 32, 10)),
      labels(backend(), std::vector<float>{3, 7});
  const double loss = network.train_step(images.get(), labels.get());
  EXPECT_NEAR(loss, std::log(10.0), 0.5);
  const std::vector<float> gradients = download(backend(), network.gradients(), network.parameter_count());
  for (const ParameterSlice& slice : network.layout()) {
    if (slice.count == 0) continue;
    double norm = 0;
    for (std::size_t i = slice.offset; i < slice.offset + slice.count; ++i) norm += std::fabs(gradients[i]);
    EXPECT_TRUE(std::isfinite(norm) && norm > 0) << slice.layer << " gradient norm " << norm;
  }
}

TEST_P(NnNetwork, BranchedModelsAndBadBatchesAreRejected) {
  try {
    Network network(build_model("googlenet"), backend(), 1);
    FAIL() << "expected UnavailableError";
  } catch (const UnavailableError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("googlenet"), std::string::npos) << message;
    EXPECT_NE(message.find("lenet, cifar10_alexnet, alexnet, vgg16, vgg19"), std::string::npos) << message;
  }
  EXPECT_THROW(Network(build_model("lenet"), backend(), 0), InputError);
}

TEST_P(NnNetwork, SgdRulesOnExactValues) {
  // Powers of two and small integers: every product and sum below is exact in float.
  const std::vector<float> w0 = {1, -2, 4, 8};
  const std::vector<float> g = {2, 4, -8, 0};
  DeviceBuffer w(backend(), w0), grad(backend(), g);
  {
    Sgd plain(backend(), 4, {.learning_rate = 0.5f});
    EXPECT_EQ(plain.velocity(), nullptr);
    plain.step(w.get(), grad.get());
    EXPECT_EQ(w.download(), (std::vector<float>{0, -4, 8, 8}));
  }
  w.upload(w0);
  {
    Sgd momentum(backend(), 4, {.learning_rate = 0.5f, .momentum = 0.5f});
    momentum.step(w.get(), grad.get());  // v = -eta g = {-1, -2, 4, 0}; w = {0, -4, 8, 8}
    momentum.step(w.get(), grad.get());  // v = 0.5 v - eta g = {-1.5, -3, 6, 0}; w = {-1.5, -7, 14, 8}
    EXPECT_EQ(w.download(), (std::vector<float>{-1.5f, -7, 14, 8}));
  }
  w.upload(w0);
  {
    Sgd decay(backend(), 4, {.learning_rate = 0.5f, .weight_decay = 0.5f});
    decay.step(w.get(), grad.get());  // g + 0.5 w = {2.5, 3, -6, 4}; w = {-0.25, -3.5, 7, 6}
    EXPECT_EQ(w.download(), (std::vector<float>{-0.25f, -3.5f, 7, 6}));
  }
  EXPECT_THROW(Sgd(backend(), 4, {.learning_rate = 0.0f}), InputError);
  EXPECT_THROW(Sgd(backend(), 4, {.learning_rate = 0.1f, .momentum = 1.0f}), InputError);
  EXPECT_THROW(Sgd(backend(), 4, {.learning_rate = 0.1f, .weight_decay = -1.0f}), InputError);
}

INSTANTIATE_TEST_SUITE_P(Backends, NnNetwork, ::testing::ValuesIn(backend_names()), backend_test_name);

}  // namespace
}  // namespace dsgd::nn::test
