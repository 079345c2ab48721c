// The "cuda" back end against the "cpu" back end: every layer on the same seeded inputs, parameters and output
// gradients, forward and backward within a relative tolerance (dropout bit for bit: both draw the same mask), the
// loss, axpby, and a whole LeNet training step on the packed buffers. Everything but the availability checks
// skips without a CUDA device; without one, asking for the back end must fail with a clear UnavailableError.
//
// Tolerance: an element agrees when |cuda - cpu| <= rtol * |cpu| + atol * max_j |cpu_j|. The two back ends sum
// in different orders (cuDNN's and oneDNN's algorithms, cuBLAS and OpenBLAS), so float rounding differs, by a few
// units in the last place of the largest terms.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/cuda/context.hpp"
#include "core/nn/cuda/cuda_backend.hpp"
#include "core/nn/network.hpp"
#include "tests/core/nn_test_support.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::nn::test {
namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-4;

void expect_close(const std::vector<float>& cuda, const std::vector<float>& cpu, const std::string& what,
                  double rtol = kRtol, double atol = kAtol) {
  ASSERT_EQ(cuda.size(), cpu.size()) << what;
  double largest = 0;
  for (float value : cpu) largest = std::max(largest, std::fabs(static_cast<double>(value)));
  int failures = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double difference = std::fabs(static_cast<double>(cuda[i]) - static_cast<double>(cpu[i]));
    const double allowed = rtol * std::fabs(static_cast<double>(cpu[i])) + atol * largest;
    if (!(difference <= allowed)) {
      ADD_FAILURE() << what << "[" << i << "]: cuda " << cuda[i] << ", cpu (expected) " << cpu[i] << ", difference "
                    << difference << " > allowed " << allowed;
      if (++failures == 10) return;
    }
  }
}

BackendOptions options() {
  BackendOptions options;
  options.threads = 2;
  options.seed = 7;
  return options;
}

// --- availability (runs everywhere) -------------------------------------------------------------------------------

TEST(CoreNnCuda, WithoutADeviceTheBackEndIsUnavailableWithAClearMessage) {
  if (cuda_backend_available()) GTEST_SKIP() << "a CUDA device is present here";
  const std::string message = dsgd::testing::error_of<UnavailableError>([] { make_backend("cuda"); });
  EXPECT_NE(message.find("cuda back end"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA device"), std::string::npos) << message;
  const std::vector<std::string> available = available_backends();
  EXPECT_EQ(std::find(available.begin(), available.end(), "cuda"), available.end());
  EXPECT_NE(std::find(available.begin(), available.end(), "cpu"), available.end());
}

TEST(CoreNnCuda, ADeviceIndexThatDoesNotExistIsUnavailable) {
  BackendOptions bad = options();
  bad.device = 4096;
  EXPECT_THROW(make_backend("cuda", bad), UnavailableError);
}

bool cublas_is_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcublas") != std::string::npos) return true;
  }
  return false;
}

TEST(CoreNnCuda, CublasIsLoadedAtItsFirstUseNotAtStart) {
  // ctest runs each test alone in a fresh process, where cuBLAS must not be there yet; run with others, an earlier
  // test may have used the back end.
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 1) {
    ASSERT_FALSE(cublas_is_mapped()) << "cuBLAS is loaded at start: is it linked again?";
  } else if (cublas_is_mapped()) {
    GTEST_SKIP() << "an earlier test of this process may have loaded cuBLAS";
  }
  const cuda::Cublas& cublas = cuda::cublas_library();  // needs the library, not a device
  EXPECT_TRUE(cublas_is_mapped());
  EXPECT_STREQ(cublas.status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_EQ(&cuda::cublas_library(), &cublas);  // loaded once
}

TEST(CoreNnCuda, WithADeviceTheBackEndDescribesItself) {
  if (!cuda_backend_available()) GTEST_SKIP() << "no CUDA device here";
  const std::unique_ptr<Backend> backend = make_backend("cuda", options());
  EXPECT_EQ(backend->name(), "cuda");
  const std::string description = backend->description();
  EXPECT_NE(description.find("cuDNN"), std::string::npos) << description;
  EXPECT_NE(description.find("cuBLAS"), std::string::npos) << description;
  const std::vector<std::string> available = available_backends();
  EXPECT_NE(std::find(available.begin(), available.end(), "cuda"), available.end());
}

// --- fixtures -----------------------------------------------------------------------------------------------------

// Both back ends, the test skipped where no CUDA device is present.
template <typename Base>
class WithCudaAndCpu : public Base {
 protected:
  void SetUp() override {
    if (!cuda_backend_available()) GTEST_SKIP() << "no CUDA device here";
    cpu_ = make_backend("cpu", options());
    cuda_ = make_backend("cuda", options());
  }

  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<Backend> cuda_;
};

using CudaAndCpu = WithCudaAndCpu<::testing::Test>;

struct LayerResult {
  std::vector<float> out;
  std::vector<float> grad_in;
  std::vector<float> grad_params;
};

// Forward (training) then backward of `layer` on copies of the host data in `backend`'s memory.
LayerResult run_layer(Backend& backend, Layer& layer, const std::vector<float>& in, const std::vector<float>& params,
                      const std::vector<float>& grad_out) {
  const std::size_t out_count = grad_out.size();
  DeviceBuffer in_buffer(backend, in);
  DeviceBuffer params_buffer(backend, params.empty() ? std::vector<float>(1, 0.0f) : params);
  DeviceBuffer out_buffer(backend, out_count);
  DeviceBuffer grad_out_buffer(backend, grad_out);
  DeviceBuffer grad_in_buffer(backend, in.size());
  DeviceBuffer grad_params_buffer(backend, std::max<std::size_t>(params.size(), 1));
  layer.forward(in_buffer.get(), out_buffer.get(), params_buffer.get(), true);
  layer.backward(in_buffer.get(), out_buffer.get(), grad_out_buffer.get(), grad_in_buffer.get(), params_buffer.get(),
                 grad_params_buffer.get());
  LayerResult result{out_buffer.download(), grad_in_buffer.download(), grad_params_buffer.download()};
  result.grad_params.resize(params.size());
  return result;
}

// --- every layer against the CPU back end -------------------------------------------------------------------------

struct LayerCase {
  std::string name;
  LayerSpec spec;
  int batch = 2;
  float amplitude = 1.0f;  // of the inputs
};

std::vector<LayerCase> layer_cases() {
  using K = LayerKind;
  return {
      {"lenet_conv1", convolution({1, 28, 28}, 20, 5, 1, 0), 4},
      {"conv_padded", convolution({3, 32, 32}, 16, 5, 1, 2), 3},
      {"conv_grouped_without_bias", convolution({8, 13, 13}, 12, 3, 2, 1, 2, false), 2},
      {"conv_11x11_stride4", convolution({3, 35, 35}, 8, 11, 4, 0), 2},
      {"conv_1x1", convolution({16, 7, 7}, 24, 1, 1, 0), 3},
      {"max_pool_2x2", pooling(K::kMaxPool, {20, 24, 24}, 2, 2, 0), 3},
      {"max_pool_ceil_overhang", pooling(K::kMaxPool, {5, 16, 16}, 3, 2, 0), 2},
      {"max_pool_padded_overhang", pooling(K::kMaxPool, {4, 12, 12}, 3, 2, 1), 2},
      {"average_pool_padded", pooling(K::kAveragePool, {4, 9, 9}, 3, 1, 1), 2},
      {"average_pool_ceil_overhang", pooling(K::kAveragePool, {4, 16, 16}, 3, 2, 0), 2},
      {"average_pool_padded_overhang", pooling(K::kAveragePool, {4, 12, 12}, 3, 2, 1), 2},
      {"global_average_pool", pooling(K::kAveragePool, {8, 7, 7}, 7, 1, 0), 3},
      {"relu", elementwise(K::kReLU, {6, 5, 5}), 3},
      {"lrn", elementwise(K::kLocalResponseNorm, {12, 6, 6}), 2, 20.0f},
      {"inner_product_lenet_ip1", inner_product({50, 4, 4}, 500), 4},
      {"inner_product_small", inner_product({10, 1, 1}, 3), 5},
      {"dropout", elementwise(K::kDropout, {64, 4, 4}, "drop6"), 2},
      {"batch_norm", elementwise(K::kBatchNorm, {6, 5, 5}), 4},
      {"softmax", elementwise(K::kSoftmax, {3, 2, 2}), 3},
  };
}

class CoreNnCudaLayers : public WithCudaAndCpu<::testing::TestWithParam<LayerCase>> {};

TEST_P(CoreNnCudaLayers, ForwardAndBackwardMatchTheCpu) {
  const LayerCase& test_case = GetParam();
  const LayerSpec& spec = test_case.spec;
  const int batch = test_case.batch;
  std::unique_ptr<Layer> cpu_layer;
  try {
    cpu_layer = cpu_->create_layer(spec, batch);
  } catch (const UnavailableError& error) {
    GTEST_SKIP() << "the cpu back end has no reference for this layer: " << error.what();
  }
  const std::unique_ptr<Layer> cuda_layer = cuda_->create_layer(spec, batch);
  ASSERT_EQ(cuda_layer->parameter_count(), cpu_layer->parameter_count());

  const auto in_count = static_cast<std::size_t>(batch * spec.input.elements());
  const auto out_count = static_cast<std::size_t>(batch * spec.output.elements());
  const std::vector<float> in = random_values(in_count, 11, test_case.amplitude);
  const std::vector<float> params = random_values(cuda_layer->parameter_count(), 12, 0.5f);
  const std::vector<float> grad_out = random_values(out_count, 13);

  const LayerResult expected = run_layer(*cpu_, *cpu_layer, in, params, grad_out);
  const LayerResult actual = run_layer(*cuda_, *cuda_layer, in, params, grad_out);
  expect_close(actual.out, expected.out, test_case.name + " forward");
  expect_close(actual.grad_in, expected.grad_in, test_case.name + " input gradient");
  expect_close(actual.grad_params, expected.grad_params, test_case.name + " parameter gradient");
  if (spec.kind == LayerKind::kDropout) {
    // Same seed, same layer name, same counter: the same mask on both back ends, so the same floats.
    EXPECT_EQ(actual.out, expected.out);
    EXPECT_EQ(actual.grad_in, expected.grad_in);
  }
}

std::string layer_case_name(const ::testing::TestParamInfo<LayerCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Layers, CoreNnCudaLayers, ::testing::ValuesIn(layer_cases()), layer_case_name);

// --- layer state and calls that the generic comparison does not reach --------------------------------------------

using CoreNnCudaState = CudaAndCpu;

TEST_F(CoreNnCudaState, DropoutIsTheIdentityInEvaluationAndDrawsAFreshMaskPerBatch) {
  const LayerSpec spec = elementwise(LayerKind::kDropout, {32, 8, 8}, "drop7");
  const int batch = 4;
  const std::unique_ptr<Layer> layer = cuda_->create_layer(spec, batch);
  const std::vector<float> in = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 21);
  DeviceBuffer in_buffer(*cuda_, in);
  DeviceBuffer out_buffer(*cuda_, in.size());
  DeviceBuffer none(*cuda_, 1);
  layer->forward(in_buffer.get(), out_buffer.get(), none.get(), false);
  EXPECT_EQ(out_buffer.download(), in);

  layer->forward(in_buffer.get(), out_buffer.get(), none.get(), true);
  const std::vector<float> first = out_buffer.download();
  layer->forward(in_buffer.get(), out_buffer.get(), none.get(), true);
  const std::vector<float> second = out_buffer.download();
  EXPECT_NE(first, second) << "a new mask for the next batch";
  std::size_t kept = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(first[i] == 0.0f || first[i] == 2.0f * in[i]) << "at " << i;
    if (first[i] != 0.0f) ++kept;
  }
  // 8192 fair draws: within 5 standard deviations (45) of half.
  const auto draws = static_cast<double>(in.size());
  EXPECT_NEAR(static_cast<double>(kept), draws / 2, 5 * std::sqrt(draws / 4));
}

TEST_F(CoreNnCudaState, BatchNormRunningStatisticsMatchTheCpu) {
  const LayerSpec spec = elementwise(LayerKind::kBatchNorm, {5, 4, 4}, "bn");
  const int batch = 3;
  const std::vector<float> in = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 31, 3.0f);
  const std::vector<float> params = random_values(static_cast<std::size_t>(spec.parameters), 32);
  std::vector<std::vector<float>> evaluated;
  for (Backend* backend : {cpu_.get(), cuda_.get()}) {
    const std::unique_ptr<Layer> layer = backend->create_layer(spec, batch);
    DeviceBuffer in_buffer(*backend, in);
    DeviceBuffer params_buffer(*backend, params);
    DeviceBuffer out_buffer(*backend, in.size());
    layer->forward(in_buffer.get(), out_buffer.get(), params_buffer.get(), true);   // folds statistics in
    layer->forward(in_buffer.get(), out_buffer.get(), params_buffer.get(), false);  // uses them
    evaluated.push_back(out_buffer.download());
  }
  expect_close(evaluated[1], evaluated[0], "batch norm in evaluation after one training batch");
}

TEST_F(CoreNnCudaState, MisalignedTensorsGiveTheAlignedResult) {
  // A layer's slice of the packed parameter buffer may start at any float; cuDNN wants 16-byte alignment.
  const LayerSpec spec = convolution({3, 10, 10}, 6, 3, 1, 1);
  const int batch = 2;
  const std::unique_ptr<Layer> layer = cuda_->create_layer(spec, batch);
  const auto in_count = static_cast<std::size_t>(batch * spec.input.elements());
  const auto out_count = static_cast<std::size_t>(batch * spec.output.elements());
  const auto param_count = static_cast<std::size_t>(spec.parameters);
  const std::vector<float> in = random_values(in_count, 41);
  const std::vector<float> params = random_values(param_count, 42, 0.5f);
  const std::vector<float> grad_out = random_values(out_count, 43);
  const LayerResult aligned = run_layer(*cuda_, *layer, in, params, grad_out);

  // The same tensors one float into larger buffers.
  auto shifted = [](const std::vector<float>& values) {
    std::vector<float> padded(values.size() + 1, 0.0f);
    std::copy(values.begin(), values.end(), padded.begin() + 1);
    return padded;
  };
  DeviceBuffer in_buffer(*cuda_, shifted(in));
  DeviceBuffer params_buffer(*cuda_, shifted(params));
  DeviceBuffer out_buffer(*cuda_, out_count + 1);
  DeviceBuffer grad_out_buffer(*cuda_, shifted(grad_out));
  DeviceBuffer grad_in_buffer(*cuda_, in_count + 1);
  DeviceBuffer grad_params_buffer(*cuda_, param_count + 1);
  layer->forward(in_buffer.get() + 1, out_buffer.get() + 1, params_buffer.get() + 1, true);
  layer->backward(in_buffer.get() + 1, out_buffer.get() + 1, grad_out_buffer.get() + 1, grad_in_buffer.get() + 1,
                  params_buffer.get() + 1, grad_params_buffer.get() + 1);
  auto unshift = [](std::vector<float> values) { return std::vector<float>(values.begin() + 1, values.end()); };
  expect_close(unshift(out_buffer.download()), aligned.out, "misaligned forward", 1e-6, 1e-6);
  expect_close(unshift(grad_in_buffer.download()), aligned.grad_in, "misaligned input gradient", 1e-6, 1e-6);
  expect_close(unshift(grad_params_buffer.download()), aligned.grad_params, "misaligned parameter gradient", 1e-6,
               1e-6);
}

// Caffe's average pooling, naively: each window divided by its elements inside the explicitly padded input.
LayerResult caffe_average_pool(const LayerSpec& spec, int batch, const std::vector<float>& in,
                               const std::vector<float>& grad_out) {
  const std::int64_t channels = spec.input.channels, height = spec.input.height, width = spec.input.width;
  const std::int64_t out_h = spec.output.height, out_w = spec.output.width, k = spec.kernel_h, s = spec.stride,
                     p = spec.pad_h;
  LayerResult result{std::vector<float>(grad_out.size(), 0.0f), std::vector<float>(in.size(), 0.0f), {}};
  for (std::int64_t plane = 0; plane < batch * channels; ++plane) {
    for (std::int64_t oy = 0; oy < out_h; ++oy) {
      for (std::int64_t ox = 0; ox < out_w; ++ox) {
        const std::int64_t y0 = oy * s - p, x0 = ox * s - p;
        const std::int64_t y1 = std::min(y0 + k, height + p), x1 = std::min(x0 + k, width + p);
        const double count = static_cast<double>((y1 - y0) * (x1 - x0));
        const auto o = static_cast<std::size_t>((plane * out_h + oy) * out_w + ox);
        double sum = 0;
        for (std::int64_t y = std::max<std::int64_t>(y0, 0); y < std::min(y1, height); ++y) {
          for (std::int64_t x = std::max<std::int64_t>(x0, 0); x < std::min(x1, width); ++x) {
            const auto i = static_cast<std::size_t>((plane * height + y) * width + x);
            sum += in[i];
            result.grad_in[i] += static_cast<float>(grad_out[o] / count);
          }
        }
        result.out[o] = static_cast<float>(sum / count);
      }
    }
  }
  return result;
}

TEST_F(CoreNnCudaState, AveragePoolingWithPaddingAndOverhangCountsAsCaffe) {
  // The CPU back end declines this combination (oneDNN has no such divisor), so the reference is naive here.
  for (const LayerSpec& spec : {pooling(LayerKind::kAveragePool, {4, 12, 12}, 3, 2, 1),
                                pooling(LayerKind::kAveragePool, {3, 16, 16}, 3, 2, 0)}) {
    const int batch = 2;
    const std::unique_ptr<Layer> layer = cuda_->create_layer(spec, batch);
    const std::vector<float> in = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 91);
    const std::vector<float> grad_out = random_values(static_cast<std::size_t>(batch * spec.output.elements()), 92);
    const LayerResult expected = caffe_average_pool(spec, batch, in, grad_out);
    const LayerResult actual = run_layer(*cuda_, *layer, in, {}, grad_out);
    const std::string what = "average pool " + std::to_string(spec.input.height) + " pad " + std::to_string(spec.pad_h);
    expect_close(actual.out, expected.out, what + " forward", 1e-5, 1e-6);
    expect_close(actual.grad_in, expected.grad_in, what + " input gradient", 1e-5, 1e-6);
  }
}

// --- back end calls -----------------------------------------------------------------------------------------------

using CoreNnCudaBackend = CudaAndCpu;

TEST_F(CoreNnCudaBackend, AllocateReturnsZeroedMemoryAndCopiesRoundTrip) {
  DeviceBuffer zeros(*cuda_, 1000);
  EXPECT_EQ(zeros.download(), std::vector<float>(1000, 0.0f));
  EXPECT_EQ(cuda_->allocate(0), nullptr);
  cuda_->release(nullptr);
  const std::vector<float> values = random_values(777, 51);
  DeviceBuffer source(*cuda_, values);
  DeviceBuffer destination(*cuda_, values.size());
  cuda_->copy(destination.get(), source.get(), values.size());
  EXPECT_EQ(destination.download(), values);
}

TEST_F(CoreNnCudaBackend, AxpbyIsExactOnSmallIntegers) {
  const std::size_t n = 100'003;  // not a multiple of a block
  std::vector<float> x(n);
  std::vector<float> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000);
    y[i] = static_cast<float>(i % 7);
  }
  DeviceBuffer dx(*cuda_, x);
  DeviceBuffer dy(*cuda_, y);
  cuda_->axpby(-0.5f, dx.get(), 2.0f, dy.get(), n);
  const std::vector<float> result = dy.download();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(result[i], -0.5f * x[i] + 2.0f * y[i]) << "at " << i;

  // b = 0 overwrites y without reading it (BLAS convention), even where y holds NaN.
  dy.upload(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
  cuda_->axpby(0.25f, dx.get(), 0.0f, dy.get(), n);
  const std::vector<float> scaled = dy.download();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(scaled[i], 0.25f * x[i]) << "at " << i;
}

TEST_F(CoreNnCudaBackend, SoftmaxCrossEntropyMatchesTheCpu) {
  const int batch = 6;
  const int classes = 300;  // more classes than the kernel has threads per row: each thread takes several
  const auto row_size = static_cast<std::ptrdiff_t>(classes);
  std::vector<float> logits =
      random_values(static_cast<std::size_t>(batch) * static_cast<std::size_t>(classes), 61, 4.0f);
  // Row 5 is a tie everywhere: the first arg-max (class 0) counts as the prediction on both back ends.
  std::fill(logits.begin() + 5 * row_size, logits.end(), 0.5f);
  const std::vector<float> labels = {3, 0, 299, 17, 150, 0};
  std::vector<double> losses;
  std::vector<int> hits;
  std::vector<std::vector<float>> grads;
  for (Backend* backend : {cpu_.get(), cuda_.get()}) {
    DeviceBuffer logits_buffer(*backend, logits);
    DeviceBuffer labels_buffer(*backend, labels);
    DeviceBuffer grad_buffer(*backend, logits.size());
    int correct = -1;
    losses.push_back(backend->softmax_cross_entropy(logits_buffer.get(), labels_buffer.get(), batch, classes,
                                                    grad_buffer.get(), &correct));
    hits.push_back(correct);
    grads.push_back(grad_buffer.download());
  }
  EXPECT_NEAR(losses[1], losses[0], 1e-5 * std::fabs(losses[0])) << "cpu (expected) " << losses[0];
  EXPECT_EQ(hits[1], hits[0]);
  EXPECT_GE(hits[1], 1) << "the tied row predicts its label 0";
  expect_close(grads[1], grads[0], "softmax cross-entropy gradient");
}

TEST_F(CoreNnCudaBackend, AWrongLabelIsAnInputErrorNamingTheRow) {
  const std::vector<float> logits = random_values(12, 71);
  DeviceBuffer logits_buffer(*cuda_, logits);
  DeviceBuffer labels_buffer(*cuda_, std::vector<float>{1, 2, 4});  // row 2's label is outside [0, 4)
  try {
    cuda_->softmax_cross_entropy(logits_buffer.get(), labels_buffer.get(), 3, 4, nullptr, nullptr);
    FAIL() << "label 4 of 4 classes was accepted";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("row 2"), std::string::npos) << message;
    EXPECT_NE(message.find("[0, 4)"), std::string::npos) << message;
  }
}

// --- a whole network ----------------------------------------------------------------------------------------------

using CoreNnCudaNetwork = CudaAndCpu;

TEST_F(CoreNnCudaNetwork, LenetTrainingStepMatchesTheCpu) {
  const ModelSpec model = build_model("lenet");
  const int batch = 8;
  const std::vector<float> images = random_values(static_cast<std::size_t>(batch * model.input.elements()), 81);
  std::vector<float> labels(batch);
  for (int i = 0; i < batch; ++i) labels[static_cast<std::size_t>(i)] = static_cast<float>((3 * i + 1) % 10);
  std::vector<double> losses;
  std::vector<std::vector<float>> gradients;
  for (Backend* backend : {cpu_.get(), cuda_.get()}) {
    Network network(model, *backend, batch);
    network.initialize(5);
    DeviceBuffer images_buffer(*backend, images);
    DeviceBuffer labels_buffer(*backend, labels);
    losses.push_back(network.train_step(images_buffer.get(), labels_buffer.get()));
    std::vector<float> host(network.parameter_count());
    backend->copy_to_host(host.data(), network.gradients(), host.size());
    gradients.push_back(std::move(host));
  }
  EXPECT_NEAR(losses[1], losses[0], 1e-4 * std::fabs(losses[0])) << "cpu (expected) " << losses[0];
  expect_close(gradients[1], gradients[0], "LeNet packed gradients");
}

}  // namespace
}  // namespace dsgd::nn::test
