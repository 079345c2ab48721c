// Layers on every back end: forward against naive double-precision references (so back ends agree on what a
// layer computes), and backward against central finite differences of the forward (so backward is the derivative
// of that forward), with respect to inputs and parameters.
//
// Gradient check: L = sum_i r_i * out_i for fixed random r; analytic dL/dx from backward(grad_out = r); numeric
// (L(x + h) - L(x - h)) / (2h) in double from the float forward. An element passes when
// |numeric - analytic| <= rtol * |analytic| + atol * max_j |analytic_j|: relative per element, plus an absolute
// floor scaled to the largest gradient (float rounding in L is relative to the whole sum, not to one element).

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/nn/backend.hpp"
#include "tests/core/nn_test_support.hpp"

namespace dsgd::nn::test {
namespace {

struct Tolerance {
  double step = 1e-2;  // h; inputs of piecewise-linear layers keep their kinks farther than h away
  double rtol = 1e-3;
  double atol = 1e-4;
};

// Runs one layer on device buffers and checks its gradients by finite differences.
class GradientCheck {
 public:
  GradientCheck(Backend& backend, const LayerSpec& spec, int batch, std::vector<float> in, std::vector<float> params)
      : backend_(backend),
        layer_(backend.create_layer(spec, batch)),
        in_host_(std::move(in)),
        params_host_(std::move(params)),
        grad_out_host_(random_values(static_cast<std::size_t>(batch * spec.output.elements()), 99)),
        in_(backend, in_host_),
        params_(backend, params_host_.empty() ? std::vector<float>(1, 0.0f) : params_host_),
        out_(backend, static_cast<std::size_t>(batch * spec.output.elements())),
        grad_out_(backend, grad_out_host_),
        grad_in_(backend, in_host_.size()),
        grad_params_(backend, std::max<std::size_t>(params_host_.size(), 1)) {
    EXPECT_EQ(in_host_.size(), static_cast<std::size_t>(batch * spec.input.elements()));
    EXPECT_EQ(params_host_.size(), layer_->parameter_count());
  }

  Layer& layer() { return *layer_; }

  std::vector<float> forward(bool training = true) {
    layer_->forward(in_.get(), out_.get(), params_.get(), training);
    return out_.download();
  }

  // backward(grad_out = r) after a forward; returns {dL/din, dL/dparams}.
  std::pair<std::vector<float>, std::vector<float>> analytic() {
    forward();
    layer_->backward(in_.get(), out_.get(), grad_out_.get(), grad_in_.get(), params_.get(), grad_params_.get());
    std::vector<float> grad_params = grad_params_.download();
    grad_params.resize(params_host_.size());
    return {grad_in_.download(), grad_params};
  }

  // Checks every element of the input (which = 0) or of the parameters (which = 1), at most `limit` of them
  // evenly spread.
  void check(int which, const Tolerance& tolerance, std::size_t limit = 100000) {
    const auto [grad_in, grad_params] = analytic();
    const std::vector<float>& analytic_grad = which == 0 ? grad_in : grad_params;
    std::vector<float>& values = which == 0 ? in_host_ : params_host_;
    DeviceBuffer& buffer = which == 0 ? in_ : params_;
    double largest = 0;
    for (float g : analytic_grad) largest = std::max(largest, std::fabs(static_cast<double>(g)));
    const std::size_t stride = std::max<std::size_t>(1, values.size() / limit);
    int failures = 0;
    for (std::size_t i = 0; i < values.size() && failures < 10; i += stride) {
      const float original = values[i];
      const auto plus = static_cast<float>(original + tolerance.step);
      const auto minus = static_cast<float>(original - tolerance.step);
      values[i] = plus;
      const double loss_plus = loss(buffer, values);
      values[i] = minus;
      const double loss_minus = loss(buffer, values);
      values[i] = original;
      const double numeric = (loss_plus - loss_minus) / (static_cast<double>(plus) - static_cast<double>(minus));
      const double expected = analytic_grad[i];
      const double allowed = tolerance.rtol * std::fabs(expected) + tolerance.atol * largest;
      if (!(std::fabs(numeric - expected) <= allowed)) {
        ++failures;
        ADD_FAILURE() << (which == 0 ? "d/dinput[" : "d/dparams[") << i << "]: finite difference " << numeric
                      << ", backward " << expected << ", allowed difference " << allowed;
      }
    }
    buffer.upload(values);
  }

 private:
  double loss(DeviceBuffer& buffer, const std::vector<float>& values) {
    buffer.upload(values);
    const std::vector<float> out = forward();
    double sum = 0;
    for (std::size_t i = 0; i < out.size(); ++i) sum += static_cast<double>(grad_out_host_[i]) * out[i];
    return sum;
  }

  Backend& backend_;
  std::unique_ptr<Layer> layer_;
  std::vector<float> in_host_, params_host_, grad_out_host_;
  DeviceBuffer in_, params_, out_, grad_out_, grad_in_, grad_params_;
};

void expect_close(const std::vector<float>& actual, const std::vector<double>& expected, double rtol, double atol) {
  ASSERT_EQ(actual.size(), expected.size());
  int failures = 0;
  for (std::size_t i = 0; i < actual.size() && failures < 10; ++i) {
    if (!(std::fabs(actual[i] - expected[i]) <= rtol * std::fabs(expected[i]) + atol)) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": " << actual[i] << ", reference " << expected[i];
    }
  }
}

// --- naive references in double ---------------------------------------------------------------------------------

std::vector<double> convolution_reference(const LayerSpec& s, int batch, const std::vector<float>& x,
                                          const std::vector<float>& p) {
  const Shape in = s.input, out = s.output;
  const std::int64_t in_per_group = in.channels / s.groups, out_per_group = out.channels / s.groups;
  const std::int64_t weights = out.channels * in_per_group * s.kernel_h * s.kernel_w;
  const bool bias = s.parameters > weights;
  std::vector<double> y(static_cast<std::size_t>(batch * out.elements()));
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t o = 0; o < out.channels; ++o) {
      for (std::int64_t oh = 0; oh < out.height; ++oh) {
        for (std::int64_t ow = 0; ow < out.width; ++ow) {
          double sum = bias ? p[weights + o] : 0.0;
          const std::int64_t g = o / out_per_group;
          for (std::int64_t i = 0; i < in_per_group; ++i) {
            for (std::int64_t kh = 0; kh < s.kernel_h; ++kh) {
              for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) {
                const std::int64_t ih = oh * s.stride - s.pad_h + kh, iw = ow * s.stride - s.pad_w + kw;
                if (ih < 0 || ih >= in.height || iw < 0 || iw >= in.width) continue;
                const std::int64_t c = g * in_per_group + i;
                sum += static_cast<double>(p[((o * in_per_group + i) * s.kernel_h + kh) * s.kernel_w + kw]) *
                       x[((n * in.channels + c) * in.height + ih) * in.width + iw];
              }
            }
          }
          y[((n * out.channels + o) * out.height + oh) * out.width + ow] = sum;
        }
      }
    }
  }
  return y;
}

// Caffe's pooling: windows clipped to the padded input; average divides by the clipped window's size (explicit
// padding counts, the ceil-mode overhang does not).
std::vector<double> pooling_reference(const LayerSpec& s, int batch, const std::vector<float>& x) {
  const Shape in = s.input, out = s.output;
  std::vector<double> y(static_cast<std::size_t>(batch * out.elements()));
  for (std::int64_t plane = 0; plane < batch * in.channels; ++plane) {
    for (std::int64_t oh = 0; oh < out.height; ++oh) {
      for (std::int64_t ow = 0; ow < out.width; ++ow) {
        const std::int64_t h0 = oh * s.stride - s.pad_h, w0 = ow * s.stride - s.pad_w;
        const std::int64_t h1 = std::min(h0 + s.kernel_h, in.height + s.pad_h);
        const std::int64_t w1 = std::min(w0 + s.kernel_w, in.width + s.pad_w);
        const auto window = static_cast<double>((h1 - h0) * (w1 - w0));
        double max = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::int64_t h = std::max<std::int64_t>(h0, 0); h < std::min(h1, in.height); ++h) {
          for (std::int64_t w = std::max<std::int64_t>(w0, 0); w < std::min(w1, in.width); ++w) {
            const double v = x[(plane * in.height + h) * in.width + w];
            max = std::max(max, v);
            sum += v;
          }
        }
        y[(plane * out.height + oh) * out.width + ow] = s.kind == LayerKind::kMaxPool ? max : sum / window;
      }
    }
  }
  return y;
}

std::vector<double> lrn_reference(const LayerSpec& s, int batch, const std::vector<float>& x) {
  const Shape d = s.input;
  const std::int64_t plane = d.height * d.width;
  std::vector<double> y(x.size());
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t c = 0; c < d.channels; ++c) {
      for (std::int64_t i = 0; i < plane; ++i) {
        double sum = 0;
        for (std::int64_t k = std::max<std::int64_t>(c - 2, 0); k <= std::min<std::int64_t>(c + 2, d.channels - 1);
             ++k) {
          const double v = x[(n * d.channels + k) * plane + i];
          sum += v * v;
        }
        const auto at = static_cast<std::size_t>((n * d.channels + c) * plane + i);
        y[at] = x[at] / std::pow(1.0 + 1e-4 / 5 * sum, 0.75);
      }
    }
  }
  return y;
}

// Distinct values spaced 2 / count apart in a seeded order: max pooling has no ties and no value lies within
// `min_gap` / 2 of another, so finite differences never cross an arg-max change.
std::vector<float> distinct_values(std::size_t count, std::uint64_t seed) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = count; i > 1; --i) std::swap(order[i - 1], order[random_bits(seed, i) % i]);
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    values[i] = static_cast<float>(2.0 * static_cast<double>(order[i]) / static_cast<double>(count) - 1.0);
  }
  return values;
}

// One CPU thread: the shapes are tiny, and thousands of forwards of a few microseconds each would otherwise pay
// for OpenMP barriers (and, on a busy machine, for waiting on a descheduled second thread). The network tests
// run on two threads.
class NnLayers : public BackendTest {
 protected:
  NnLayers() { threads_ = 1; }
};

// Strided and padded; grouped; without bias; and channel counts that are multiples of 16 (an image-like input,
// grouped, strided), which the CPU back end runs on oneDNN's channel-blocked layouts rather than plain ones.
std::vector<LayerSpec> convolution_cases() {
  return {convolution({3, 7, 7}, 4, 3, 2, 1),           convolution({4, 6, 5}, 6, 3, 1, 1, 2),
          convolution({2, 5, 5}, 3, 2, 1, 0, 1, false), convolution({3, 8, 8}, 16, 5, 1, 2),
          convolution({32, 5, 5}, 32, 3, 1, 1, 2),      convolution({16, 6, 6}, 32, 3, 2, 1)};
}

std::string describe(const LayerSpec& spec) {
  return "convolution " + std::to_string(spec.input.channels) + " -> " + std::to_string(spec.output.channels) +
         ", kernel " + std::to_string(spec.kernel_h) + ", stride " + std::to_string(spec.stride) + ", groups " +
         std::to_string(spec.groups);
}

// --- convolution ------------------------------------------------------------------------------------------------

TEST_P(NnLayers, ConvolutionForwardMatchesReference) {
  for (const LayerSpec& spec : convolution_cases()) {
    SCOPED_TRACE(describe(spec));
    const int batch = 2;
    const auto x = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 1);
    const auto p = random_values(static_cast<std::size_t>(spec.parameters), 2);
    GradientCheck check(backend(), spec, batch, x, p);
    expect_close(check.forward(), convolution_reference(spec, batch, x, p), 1e-5, 1e-5);
  }
}

TEST_P(NnLayers, ConvolutionGradients) {
  for (const LayerSpec& spec : convolution_cases()) {
    SCOPED_TRACE(describe(spec));
    const int batch = 2;
    GradientCheck check(backend(), spec, batch,
                        random_values(static_cast<std::size_t>(batch * spec.input.elements()), 3),
                        random_values(static_cast<std::size_t>(spec.parameters), 4));
    check.check(0, {}, 150);
    check.check(1, {}, 150);
  }
}

TEST_P(NnLayers, BackwardOverwritesParameterGradientsAndMaySkipInputGradient) {
  const LayerSpec spec = convolution({3, 6, 6}, 4, 3, 1, 1);
  const int batch = 2;
  DeviceBuffer in(backend(), random_values(static_cast<std::size_t>(batch * spec.input.elements()), 5));
  DeviceBuffer params(backend(), random_values(static_cast<std::size_t>(spec.parameters), 6));
  DeviceBuffer out(backend(), static_cast<std::size_t>(batch * spec.output.elements()));
  DeviceBuffer grad_out(backend(), random_values(out.size(), 7));
  DeviceBuffer grad_in(backend(), in.size());
  DeviceBuffer grad_params(backend(), params.size());
  const auto layer = backend().create_layer(spec, batch);
  EXPECT_EQ(layer->parameter_count(), static_cast<std::size_t>(spec.parameters));
  EXPECT_EQ(layer->batch(), batch);
  layer->forward(in.get(), out.get(), params.get(), true);
  layer->backward(in.get(), out.get(), grad_out.get(), grad_in.get(), params.get(), grad_params.get());
  const std::vector<float> first = grad_params.download();
  layer->backward(in.get(), out.get(), grad_out.get(), nullptr, params.get(), grad_params.get());
  EXPECT_EQ(grad_params.download(), first) << "a second backward must overwrite, bit for bit, not accumulate";
}

// --- pooling ----------------------------------------------------------------------------------------------------

// Max and average pooling of 6x6, kernel 3, stride 2, ceil: the last window hangs over the input; of 5x5, kernel 3,
// stride 1, pad 1: padding counts; and LeNet's 2x2 max pooling of a `square` x `square` input.
std::vector<LayerSpec> pooling_cases(std::int64_t square) {
  return {pooling(LayerKind::kMaxPool, {3, 6, 6}, 3, 2, 0), pooling(LayerKind::kAveragePool, {3, 6, 6}, 3, 2, 0),
          pooling(LayerKind::kMaxPool, {2, 5, 5}, 3, 1, 1), pooling(LayerKind::kAveragePool, {2, 5, 5}, 3, 1, 1),
          pooling(LayerKind::kMaxPool, {2, square, square}, 2, 2, 0)};
}

TEST_P(NnLayers, PoolingForwardMatchesCaffe) {
  for (const LayerSpec& spec : pooling_cases(28)) {
    SCOPED_TRACE(std::string(to_string(spec.kind)) + " on " + std::to_string(spec.input.height));
    const int batch = 2;
    const auto x = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 8);
    GradientCheck check(backend(), spec, batch, x, {});
    expect_close(check.forward(), pooling_reference(spec, batch, x), 1e-6, 1e-6);
  }
}

TEST_P(NnLayers, AveragePoolingOfOnesIsOneWithOverhangAndFractionWithPadding) {
  const int batch = 1;
  const LayerSpec overhang = pooling(LayerKind::kAveragePool, {1, 6, 6}, 3, 2, 0);
  ASSERT_EQ(overhang.output.height, 3);
  GradientCheck ceil_mode(backend(), overhang, batch, std::vector<float>(36, 1.0f), {});
  for (float v : ceil_mode.forward()) EXPECT_EQ(v, 1.0f) << "the ceil-mode overhang must not count";
  const LayerSpec padded = pooling(LayerKind::kAveragePool, {1, 3, 3}, 3, 1, 1);
  GradientCheck explicit_pad(backend(), padded, batch, std::vector<float>(9, 1.0f), {});
  EXPECT_FLOAT_EQ(explicit_pad.forward()[0], 4.0f / 9.0f) << "explicit padding counts (Caffe)";
}

TEST_P(NnLayers, PoolingGradients) {
  for (const LayerSpec& spec : pooling_cases(8)) {
    SCOPED_TRACE(std::string(to_string(spec.kind)) + " on " + std::to_string(spec.input.height));
    const int batch = 2;
    const auto count = static_cast<std::size_t>(batch * spec.input.elements());
    // Max pooling: values 2 / count apart, a step of a quarter of that never changes an arg-max.
    const Tolerance tolerance{0.5 / static_cast<double>(count), 1e-4, 1e-5};
    GradientCheck check(backend(), spec, batch, distinct_values(count, 9), {});
    check.check(0, tolerance);
  }
}

// --- ReLU -------------------------------------------------------------------------------------------------------

TEST_P(NnLayers, ReluForwardAndGradients) {
  const LayerSpec spec = elementwise(LayerKind::kReLU, {3, 4, 5});
  const int batch = 2;
  auto x = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 10);
  for (float& v : x) v += v < 0 ? -0.05f : 0.05f;  // keep the kink at 0 farther than the step
  GradientCheck check(backend(), spec, batch, x, {});
  const std::vector<float> y = check.forward();
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);
  check.check(0, {});
}

// IEEE: a NaN input gives a NaN output. ReLU and max pooling that turned a NaN into 0 or a neighbour's value would
// hide diverged weights behind a finite loss (issue 42).
TEST_P(NnLayers, ReluAndMaxPoolingPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const LayerSpec relu = elementwise(LayerKind::kReLU, {1, 2, 2});
  GradientCheck relu_check(backend(), relu, 1, {nan, -1.0F, 2.0F, nan}, {});
  const std::vector<float> y = relu_check.forward();
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[3])) << y[0] << " " << y[3];
  EXPECT_EQ(y[1], 0.0F);
  EXPECT_EQ(y[2], 2.0F);
  const LayerSpec pool = pooling(LayerKind::kMaxPool, {1, 2, 2}, 2, 2, 0);
  for (std::size_t at = 0; at < 4; ++at) {
    std::vector<float> x = {1.0F, 2.0F, 3.0F, 4.0F};
    x[at] = nan;
    GradientCheck pool_check(backend(), pool, 1, x, {});
    EXPECT_TRUE(std::isnan(pool_check.forward()[0])) << "NaN at " << at << " pooled to " << pool_check.forward()[0];
  }
}

// Inputs large enough that the back end scans them for NaN on both threads, each a contiguous share: a NaN at
// either end of either share still comes through.
class NnLayersTwoThreads : public BackendTest {
 protected:
  NnLayersTwoThreads() { threads_ = 2; }
};

TEST_P(NnLayersTwoThreads, ReluAndMaxPoolingPropagateNanFromEveryShareOfALargeInput) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Shape shape{16, 64, 64};
  const auto count = static_cast<std::size_t>(shape.elements());
  const LayerSpec relu = elementwise(LayerKind::kReLU, shape);
  const LayerSpec pool = pooling(LayerKind::kMaxPool, shape, 2, 2, 0);
  for (const std::size_t at : {std::size_t{0}, count / 2 - 1, count / 2, count - 1}) {
    std::vector<float> x(count, 1.0F);
    x[at] = nan;
    GradientCheck relu_check(backend(), relu, 1, x, {});
    EXPECT_TRUE(std::isnan(relu_check.forward()[at])) << "ReLU: NaN at " << at;
    GradientCheck pool_check(backend(), pool, 1, x, {});
    const std::vector<float> y = pool_check.forward();
    const auto row = static_cast<std::size_t>(shape.width);
    const std::size_t pooled = at / (2 * row) * (row / 2) + at % row / 2;  // the window of plane row at / row
    EXPECT_TRUE(std::isnan(y[pooled])) << "max pooling: NaN at " << at << " pooled to " << y[pooled];
  }
}

// --- local response normalisation -------------------------------------------------------------------------------

TEST_P(NnLayers, LrnForwardMatchesCaffe) {
  const LayerSpec spec = elementwise(LayerKind::kLocalResponseNorm, {7, 3, 3});
  const int batch = 2;
  // Large inputs, so the normaliser (1 + 2e-5 * sum of squares) differs visibly from 1.
  const auto x = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 11, 50.0f);
  GradientCheck check(backend(), spec, batch, x, {});
  expect_close(check.forward(), lrn_reference(spec, batch, x), 1e-5, 1e-4);
}

TEST_P(NnLayers, LrnGradients) {
  const LayerSpec spec = elementwise(LayerKind::kLocalResponseNorm, {7, 3, 3});
  const int batch = 2;
  GradientCheck check(backend(), spec, batch,
                      random_values(static_cast<std::size_t>(batch * spec.input.elements()), 12, 50.0f), {});
  check.check(0, {0.05, 2e-3, 5e-4});
}

// --- inner product ----------------------------------------------------------------------------------------------

TEST_P(NnLayers, InnerProductForwardAndGradients) {
  const LayerSpec spec = inner_product({3, 2, 2}, 5);
  const int batch = 3;
  const auto x = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 13);
  const auto p = random_values(static_cast<std::size_t>(spec.parameters), 14);
  GradientCheck check(backend(), spec, batch, x, p);
  std::vector<double> reference(static_cast<std::size_t>(batch * 5));
  for (int n = 0; n < batch; ++n) {
    for (int o = 0; o < 5; ++o) {
      double sum = p[60 + o];
      for (int i = 0; i < 12; ++i) sum += static_cast<double>(p[o * 12 + i]) * x[n * 12 + i];
      reference[n * 5 + o] = sum;
    }
  }
  expect_close(check.forward(), reference, 1e-5, 1e-5);
  check.check(0, {});
  check.check(1, {});
}

// --- dropout ----------------------------------------------------------------------------------------------------

TEST_P(NnLayers, DropoutKeepsHalfScaledAndBackwardAppliesTheSameMask) {
  const LayerSpec spec = elementwise(LayerKind::kDropout, {4, 8, 8}, "drop");
  const int batch = 4;
  auto x = random_values(static_cast<std::size_t>(batch * spec.input.elements()), 15);
  for (float& v : x) v += v < 0 ? -0.5f : 0.5f;  // nonzero: a zero output means dropped
  const std::vector<float> g = random_values(x.size(), 16);
  DeviceBuffer in(backend(), x), out(backend(), x.size()), grad_out(backend(), g), grad_in(backend(), x.size());
  const auto layer = backend().create_layer(spec, batch);
  EXPECT_EQ(layer->parameter_count(), 0U);

  layer->forward(in.get(), out.get(), nullptr, true);
  const std::vector<float> y = out.download();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (y[i] != 0.0f) {
      ++kept;
      EXPECT_EQ(y[i], 2.0f * x[i]) << "kept elements scale by 1 / (1 - p)";
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(x.size()), 0.5, 0.05);
  // For a fixed mask dropout is linear with the mask as its gradient: backward must apply forward's mask.
  layer->backward(in.get(), out.get(), grad_out.get(), grad_in.get(), nullptr, nullptr);
  const std::vector<float> dx = grad_in.download();
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(dx[i], y[i] != 0.0f ? 2.0f * g[i] : 0.0f) << i;

  layer->forward(in.get(), out.get(), nullptr, true);
  EXPECT_NE(out.download(), y) << "each training forward draws a fresh mask";
  layer->forward(in.get(), out.get(), nullptr, false);
  EXPECT_EQ(out.download(), x) << "evaluation is the identity";
  layer->backward(in.get(), out.get(), grad_out.get(), grad_in.get(), nullptr, nullptr);
  EXPECT_EQ(grad_in.download(), g) << "backward after evaluation passes gradients through";
}

TEST_P(NnLayers, DropoutMaskDependsOnlyOnSeedNameAndCall) {
  const LayerSpec spec = elementwise(LayerKind::kDropout, {3, 5, 5}, "drop");
  const std::vector<float> x(75, 1.0f);
  auto masks = [&](const std::string& name) {
    BackendOptions options;
    options.threads = 2;  // a different thread count than the fixture's: masks must not depend on it
    options.seed = 7;
    const auto other = make_backend(GetParam(), options);
    LayerSpec named = spec;
    named.name = name;
    DeviceBuffer in(*other, x), out(*other, x.size());
    const auto layer = other->create_layer(named, 1);
    std::vector<std::vector<float>> result;
    for (int call = 0; call < 2; ++call) {
      layer->forward(in.get(), out.get(), nullptr, true);
      result.push_back(out.download());
    }
    return result;
  };
  DeviceBuffer in(backend(), x), out(backend(), x.size());
  const auto layer = backend().create_layer(spec, 1);
  layer->forward(in.get(), out.get(), nullptr, true);
  const auto same = masks("drop");
  EXPECT_EQ(same[0], out.download()) << "same seed, name and call: same mask on any thread count";
  EXPECT_NE(same[0], same[1]);
  EXPECT_NE(masks("drop2")[0], same[0]) << "another layer name draws another mask";
}

// --- batch norm (optional on a back end) ------------------------------------------------------------------------

TEST_P(NnLayers, BatchNormGradients) {
  const LayerSpec spec = elementwise(LayerKind::kBatchNorm, {3, 3, 3});
  const int batch = 4;
  std::vector<float> params = random_values(6, 16, 0.5f);
  for (int c = 0; c < 3; ++c) params[c] += 1.0f;  // scales near 1
  std::unique_ptr<GradientCheck> check;
  try {
    check = std::make_unique<GradientCheck>(
        backend(), spec, batch, random_values(static_cast<std::size_t>(batch * spec.input.elements()), 17), params);
  } catch (const UnavailableError& e) {
    GTEST_SKIP() << e.what();
  }
  check->check(0, {1e-2, 2e-3, 5e-4});
  check->check(1, {1e-2, 2e-3, 5e-4});
}

// --- softmax layer (optional) and the softmax cross-entropy loss ------------------------------------------------

TEST_P(NnLayers, SoftmaxLayerGradients) {
  const LayerSpec spec = elementwise(LayerKind::kSoftmax, {6, 1, 1});
  const int batch = 3;
  std::unique_ptr<GradientCheck> check;
  try {
    check = std::make_unique<GradientCheck>(backend(), spec, batch, random_values(18, 18, 2.0f), std::vector<float>{});
  } catch (const UnavailableError& e) {
    GTEST_SKIP() << e.what();
  }
  const std::vector<float> y = check->forward();
  for (int n = 0; n < batch; ++n) {
    const auto row = y.begin() + std::ptrdiff_t{6} * n;
    EXPECT_NEAR(std::accumulate(row, row + 6, 0.0), 1.0, 1e-6);
  }
  check->check(0, {});
}

TEST_P(NnLayers, SoftmaxCrossEntropyLossGradientAndAccuracy) {
  const int batch = 4, classes = 5;
  std::vector<float> logits = random_values(std::size_t{batch} * classes, 19, 3.0f);
  const std::vector<float> labels = {0, 3, 4, 1};
  // Row 1's arg-max is its label, the others' are not (unless the random draw makes them so: computed below).
  logits[1 * classes + 3] = 10.0f;
  int expected_correct = 0;
  double expected_loss = 0;
  for (int n = 0; n < batch; ++n) {
    const float* row = logits.data() + std::ptrdiff_t{classes} * n;
    const int arg_max = static_cast<int>(std::max_element(row, row + classes) - row);
    expected_correct += arg_max == static_cast<int>(labels[n]) ? 1 : 0;
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]));
    expected_loss += std::log(sum) - row[static_cast<int>(labels[n])];
  }
  expected_loss /= batch;

  DeviceBuffer device_logits(backend(), logits);
  DeviceBuffer device_labels(backend(), labels);
  DeviceBuffer grad(backend(), logits.size());
  int correct = -1;
  const double loss =
      backend().softmax_cross_entropy(device_logits.get(), device_labels.get(), batch, classes, grad.get(), &correct);
  EXPECT_NEAR(loss, expected_loss, 1e-5 * expected_loss);
  EXPECT_EQ(correct, expected_correct);
  const std::vector<float> analytic = grad.download();
  const double step = 1e-2;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float original = logits[i];
    const auto plus = static_cast<float>(original + step), minus = static_cast<float>(original - step);
    logits[i] = plus;
    device_logits.upload(logits);
    const double loss_plus =
        backend().softmax_cross_entropy(device_logits.get(), device_labels.get(), batch, classes, nullptr, nullptr);
    logits[i] = minus;
    device_logits.upload(logits);
    const double loss_minus =
        backend().softmax_cross_entropy(device_logits.get(), device_labels.get(), batch, classes, nullptr, nullptr);
    logits[i] = original;
    const double numeric = (loss_plus - loss_minus) / (static_cast<double>(plus) - minus);
    EXPECT_NEAR(numeric, analytic[i], 1e-3 * std::fabs(analytic[i]) + 1e-4) << "logit " << i;
  }
}

// --- the back end itself ----------------------------------------------------------------------------------------

TEST_P(NnLayers, AxpbyAndMemory) {
  // Small integers: exact in float whatever the order of operations.
  const std::vector<float> x = {1, 2, 3, -4, 5};
  DeviceBuffer dx(backend(), x);
  DeviceBuffer dy(backend(), std::vector<float>{10, 20, 30, 40, 50});
  backend().axpby(2.0f, dx.get(), -1.0f, dy.get(), x.size());
  EXPECT_EQ(dy.download(), (std::vector<float>{-8, -16, -24, -48, -40}));
  DeviceBuffer zeroed(backend(), 1000);
  EXPECT_EQ(zeroed.download(), std::vector<float>(1000, 0.0f)) << "allocate() returns zeroed memory";
  backend().copy(zeroed.get(), dx.get(), x.size());
  const std::vector<float> copied = zeroed.download();
  EXPECT_EQ(std::vector<float>(copied.begin(), copied.begin() + 5), x);
  backend().release(nullptr);
  EXPECT_FALSE(backend().description().empty());
  EXPECT_EQ(backend().name(), GetParam());
}

TEST_P(NnLayers, JoinLayersAreUnavailableAndBadBatchIsAnInputError) {
  LayerSpec concat = elementwise(LayerKind::kConcat, {2, 2, 2}, "cat");
  EXPECT_THROW(backend().create_layer(concat, 2), UnavailableError);
  EXPECT_THROW(backend().create_layer(convolution({3, 5, 5}, 2, 3, 1, 0), 0), InputError);
  LayerSpec wrong = convolution({3, 5, 5}, 2, 3, 1, 0);
  wrong.output.height = 7;  // does not follow from the geometry
  EXPECT_THROW(backend().create_layer(wrong, 1), InputError);
}

INSTANTIATE_TEST_SUITE_P(Backends, NnLayers, ::testing::ValuesIn(backend_names()), backend_test_name);
INSTANTIATE_TEST_SUITE_P(Backends, NnLayersTwoThreads, ::testing::ValuesIn(backend_names()), backend_test_name);

TEST(CoreNnBackend, UnknownNameListsTheValidOnes) {
  try {
    make_backend("tpu");
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu, cuda"), std::string::npos) << e.what();
  }
  const std::vector<std::string> available = available_backends();
  ASSERT_FALSE(available.empty());
  EXPECT_EQ(available.front(), "cpu");
}

// oneDNN's primitive cache does not key on the thread count a kernel fixes its work split by, so a layer created at
// one thread count must not be handed one built at another (cpu_backend.cpp).
TEST(CoreNnCpuBackend, LayersDoNotShareCachedPrimitivesAcrossThreadCounts) {
  const auto backend = make_backend("cpu", {.threads = 1});
  EXPECT_EQ(dnnl::get_primitive_cache_capacity(), 0);
}

}  // namespace
}  // namespace dsgd::nn::test
