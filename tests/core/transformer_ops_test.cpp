// A transformer's CPU kernels (core/nn/transformer_ops.hpp): every backward against central finite differences of
// its forward, forwards against naive double references or known values, causality, AdamW's first step, bit-level
// determinism across runs and OpenMP thread counts, and size errors.
//
// Gradient check (as tests/core/nn_layers_test.cpp): L = sum_i r_i out_i for fixed random r; analytic dL/dx from
// backward(d_out = r); numeric (L(x + h) - L(x - h)) / (2h) in double from the float forward. An element passes when
// |numeric - analytic| <= rtol |analytic| + atol max_j |analytic_j|, rtol = 1e-3, atol = 1e-4.

#include "core/nn/transformer_ops.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::nn {
namespace {

std::vector<float> random_values(std::size_t n, std::uint32_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(n);
  for (float& value : values) value = uniform(engine);
  return values;
}

double weighted_sum(const std::vector<float>& r, const std::vector<float>& out) {
  double sum = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) sum += static_cast<double>(r[i]) * out[i];
  return sum;
}

// Compares `analytic` with central differences of `loss` in every element of `x` (perturbed in place, restored).
void expect_gradient(const char* what, std::vector<float>& x, const std::vector<float>& analytic,
                     const std::function<double()>& loss, double step = 1e-2) {
  SCOPED_TRACE(what);
  ASSERT_EQ(x.size(), analytic.size());
  double largest = 0.0;
  for (const float a : analytic) largest = std::max(largest, static_cast<double>(std::fabs(a)));
  ASSERT_GT(largest, 0.0) << "a gradient of zeros checks nothing";
  int failures = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float original = x[i];
    x[i] = static_cast<float>(original + step);
    const double up = loss();
    x[i] = static_cast<float>(original - step);
    const double down = loss();
    x[i] = original;
    const double numeric = (up - down) / (2.0 * step);
    const double tolerance = 1e-3 * std::fabs(analytic[i]) + 1e-4 * largest;
    if (std::fabs(numeric - analytic[i]) > tolerance && ++failures <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: numeric " << numeric << ", analytic " << analytic[i];
    }
  }
  EXPECT_EQ(failures, 0);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

using dsgd::testing::expect_input_error;

constexpr std::int64_t kTokens = 6;
constexpr std::int64_t kHidden = 8;

TEST(NnTransformerOps, EmbeddingCopiesRowsAndItsBackwardAccumulatesInTokenOrder) {
  const std::int64_t vocabulary = 5;
  const std::vector<std::int32_t> ids = {1, 3, 1, 0, 4, 1};
  std::vector<float> table = random_values(vocabulary * kHidden, 1);
  std::vector<float> out(kTokens * kHidden);
  embedding_forward(table, ids, out, vocabulary, kHidden);
  for (std::int64_t t = 0; t < kTokens; ++t) {
    for (std::int64_t j = 0; j < kHidden; ++j) EXPECT_EQ(out[t * kHidden + j], table[ids[t] * kHidden + j]);
  }
  const std::vector<float> r = random_values(out.size(), 2);
  std::vector<float> d_table(table.size(), 0.0f);
  embedding_backward(ids, r, d_table, vocabulary, kHidden);
  expect_gradient("d_table", table, d_table, [&] {
    embedding_forward(table, ids, out, vocabulary, kHidden);
    return weighted_sum(r, out);
  });
  // Row 2 is used by no token; a second backward adds to the first, token by token in order (exact bits).
  for (std::int64_t j = 0; j < kHidden; ++j) EXPECT_EQ(d_table[2 * kHidden + j], 0.0f);
  std::vector<float> expected = d_table;
  for (std::int64_t t = 0; t < kTokens; ++t) {
    for (std::int64_t j = 0; j < kHidden; ++j) expected[ids[t] * kHidden + j] += r[t * kHidden + j];
  }
  embedding_backward(ids, r, d_table, vocabulary, kHidden);
  EXPECT_TRUE(same_bits(d_table, expected));
}

TEST(NnTransformerOps, EmbeddingRefusesAnIdOutsideTheVocabulary) {
  std::vector<float> table(5 * kHidden);
  std::vector<float> out(2 * kHidden);
  expect_input_error(
      [&] {
        embedding_forward(table, std::vector<std::int32_t>{0, 5}, out, 5, kHidden);
      },
      "embedding_forward: ids[1] = 5 is outside [0, 5)");
  expect_input_error(
      [&] {
        embedding_backward(std::vector<std::int32_t>{-1, 0}, out, table, 5, kHidden);
      },
      "embedding_backward: ids[0] = -1");
}

TEST(NnTransformerOps, LayerNormNormalisesRowsAndItsBackwardIsItsDerivative) {
  std::vector<float> x = random_values(kTokens * kHidden, 3, -2.0f, 2.0f);
  std::vector<float> gamma = random_values(kHidden, 4, 0.5f, 1.5f);
  std::vector<float> beta = random_values(kHidden, 5);
  std::vector<float> y(x.size()), mean(kTokens), rstd(kTokens);
  // With gamma = 1, beta = 0 each row has mean 0 and (biased) variance 1 - eps/(var + eps).
  const std::vector<float> ones(kHidden, 1.0f), zeros(kHidden, 0.0f);
  layer_norm_forward(x, ones, zeros, y, mean, rstd, kTokens, kHidden);
  for (std::int64_t t = 0; t < kTokens; ++t) {
    double sum = 0.0, squares = 0.0;
    for (std::int64_t j = 0; j < kHidden; ++j) sum += y[t * kHidden + j];
    for (std::int64_t j = 0; j < kHidden; ++j) squares += y[t * kHidden + j] * y[t * kHidden + j];
    EXPECT_NEAR(sum / kHidden, 0.0, 1e-6);
    EXPECT_NEAR(squares / kHidden, 1.0, 1e-4);
  }
  const std::vector<float> r = random_values(y.size(), 6);
  const auto loss = [&] {
    layer_norm_forward(x, gamma, beta, y, mean, rstd, kTokens, kHidden);
    return weighted_sum(r, y);
  };
  loss();
  std::vector<float> d_x(x.size()), d_gamma(kHidden, 0.0f), d_beta(kHidden, 0.0f);
  layer_norm_backward(x, gamma, mean, rstd, r, d_x, d_gamma, d_beta, kTokens, kHidden);
  expect_gradient("d_x", x, d_x, loss);
  expect_gradient("d_gamma", gamma, d_gamma, loss);
  expect_gradient("d_beta", beta, d_beta, loss);
}

TEST(NnTransformerOps, RmsNormBackwardIsItsDerivative) {
  std::vector<float> x = random_values(kTokens * kHidden, 7, -2.0f, 2.0f);
  std::vector<float> gamma = random_values(kHidden, 8, 0.5f, 1.5f);
  std::vector<float> y(x.size()), rstd(kTokens);
  rms_norm_forward(x, gamma, y, rstd, kTokens, kHidden);
  double squares = 0.0;
  for (std::int64_t j = 0; j < kHidden; ++j) squares += x[j] * x[j];
  EXPECT_NEAR(rstd[0], 1.0 / std::sqrt(squares / kHidden + 1e-5), 1e-6);
  EXPECT_NEAR(y[1], x[1] * rstd[0] * gamma[1], 1e-6);
  const std::vector<float> r = random_values(y.size(), 9);
  const auto loss = [&] {
    rms_norm_forward(x, gamma, y, rstd, kTokens, kHidden);
    return weighted_sum(r, y);
  };
  loss();
  std::vector<float> d_x(x.size()), d_gamma(kHidden, 0.0f);
  rms_norm_backward(x, gamma, rstd, r, d_x, d_gamma, kTokens, kHidden);
  expect_gradient("d_x", x, d_x, loss);
  expect_gradient("d_gamma", gamma, d_gamma, loss);
}

TEST(NnTransformerOps, LinearMatchesAReferenceAndItsBackwardIsItsDerivative) {
  const std::int64_t in = kHidden, out = 5;
  std::vector<float> x = random_values(kTokens * in, 10);
  std::vector<float> w = random_values(in * out, 11);
  std::vector<float> bias = random_values(out, 12);
  std::vector<float> y(kTokens * out);
  linear_forward(x, w, bias, y, kTokens, in, out);
  for (std::int64_t t = 0; t < kTokens; ++t) {
    for (std::int64_t n = 0; n < out; ++n) {
      double expected = bias[n];
      for (std::int64_t c = 0; c < in; ++c) expected += static_cast<double>(x[t * in + c]) * w[c * out + n];
      EXPECT_NEAR(y[t * out + n], expected, 1e-5);
    }
  }
  const std::vector<float> r = random_values(y.size(), 13);
  const auto loss = [&] {
    linear_forward(x, w, bias, y, kTokens, in, out);
    return weighted_sum(r, y);
  };
  std::vector<float> d_x(x.size()), d_w(w.size(), 0.0f), d_bias(out, 0.0f);
  linear_backward(x, w, r, d_x, d_w, d_bias, kTokens, in, out);
  expect_gradient("d_x", x, d_x, loss);
  expect_gradient("d_w", w, d_w, loss);
  expect_gradient("d_bias", bias, d_bias, loss);
  // Parameter gradients accumulate (micro-batches); d_x is written; both may be skipped.
  const std::vector<float> d_w_once = d_w, d_bias_once = d_bias, d_x_once = d_x;
  linear_backward(x, w, r, d_x, d_w, d_bias, kTokens, in, out);
  for (std::size_t i = 0; i < d_w.size(); ++i) EXPECT_FLOAT_EQ(d_w[i], 2.0f * d_w_once[i]);
  for (std::size_t i = 0; i < d_bias.size(); ++i) EXPECT_FLOAT_EQ(d_bias[i], 2.0f * d_bias_once[i]);
  EXPECT_TRUE(same_bits(d_x, d_x_once));
  linear_backward(x, w, r, {}, d_w, {}, kTokens, in, out);
  linear_forward(x, w, {}, y, kTokens, in, out);
  double expected = 0.0;
  for (std::int64_t c = 0; c < in; ++c) expected += static_cast<double>(x[c]) * w[c * out];
  EXPECT_NEAR(y[0], expected, 1e-5);
}

// Naive double attention with the grouped-query mapping, for the forward.
std::vector<double> reference_attention(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, const AttentionShape& s) {
  const std::int64_t qs = s.heads * s.head_dim, ks = s.kv_heads * s.head_dim;
  std::vector<double> out(q.size(), 0.0);
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = h / (s.heads / s.kv_heads);
      for (std::int64_t i = 0; i < s.sequence; ++i) {
        std::vector<double> score(i + 1);
        double max_score = -1e300, sum = 0.0;
        for (std::int64_t j = 0; j <= i; ++j) {
          for (std::int64_t c = 0; c < s.head_dim; ++c) {
            score[j] += static_cast<double>(q[(b * s.sequence + i) * qs + h * s.head_dim + c]) *
                        k[(b * s.sequence + j) * ks + g * s.head_dim + c];
          }
          score[j] /= std::sqrt(static_cast<double>(s.head_dim));
          max_score = std::max(max_score, score[j]);
        }
        for (double& e : score) sum += (e = std::exp(e - max_score));
        for (std::int64_t j = 0; j <= i; ++j) {
          for (std::int64_t c = 0; c < s.head_dim; ++c) {
            out[(b * s.sequence + i) * qs + h * s.head_dim + c] +=
                score[j] / sum * v[(b * s.sequence + j) * ks + g * s.head_dim + c];
          }
        }
      }
    }
  }
  return out;
}

TEST(NnTransformerOps, CausalAttentionMatchesAReferenceAndItsBackwardIsItsDerivative) {
  // 2 sequences of 3 tokens (T = 6): grouped-query (2 heads on 1 kv head, 4 on 2) and multi-head.
  for (const AttentionShape shape :
       {AttentionShape{2, 3, 2, 1, 4}, AttentionShape{2, 3, 4, 2, 4}, AttentionShape{1, 5, 2, 2, 3}}) {
    SCOPED_TRACE("heads " + std::to_string(shape.heads) + ", kv_heads " + std::to_string(shape.kv_heads));
    const std::int64_t tokens = shape.batch * shape.sequence;
    std::vector<float> q = random_values(tokens * shape.heads * shape.head_dim, 14, -2.0f, 2.0f);
    std::vector<float> k = random_values(tokens * shape.kv_heads * shape.head_dim, 15, -2.0f, 2.0f);
    std::vector<float> v = random_values(k.size(), 16);
    std::vector<float> out(q.size());
    std::vector<float> probs(shape.batch * shape.heads * shape.sequence * shape.sequence);
    causal_attention_forward(q, k, v, out, probs, shape);
    const std::vector<double> expected = reference_attention(q, k, v, shape);
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected[i], 1e-5) << i;
    const std::vector<float> r = random_values(out.size(), 17);
    const auto loss = [&] {
      causal_attention_forward(q, k, v, out, probs, shape);
      return weighted_sum(r, out);
    };
    loss();
    std::vector<float> d_q(q.size()), d_k(k.size()), d_v(v.size());
    causal_attention_backward(q, k, v, probs, r, d_q, d_k, d_v, shape);
    expect_gradient("d_q", q, d_q, loss);
    expect_gradient("d_k", k, d_k, loss);
    expect_gradient("d_v", v, d_v, loss);
  }
}

TEST(NnTransformerOps, CausalAttentionDoesNotLookAhead) {
  const AttentionShape shape{2, 4, 2, 1, 4};
  const std::int64_t tokens = shape.batch * shape.sequence;
  const std::vector<float> q = random_values(tokens * shape.heads * shape.head_dim, 18);
  std::vector<float> k = random_values(tokens * shape.kv_heads * shape.head_dim, 19);
  std::vector<float> v = random_values(k.size(), 20);
  std::vector<float> out(q.size()), probs(shape.batch * shape.heads * shape.sequence * shape.sequence);
  causal_attention_forward(q, k, v, out, probs, shape);
  const std::vector<float> before = out;
  // Change the last token of the first sequence: its own output changes, earlier tokens' and the second
  // sequence's outputs do not (not a bit).
  const std::int64_t last = shape.sequence - 1, kv_row = shape.kv_heads * shape.head_dim;
  for (std::int64_t c = 0; c < kv_row; ++c) {
    k[last * kv_row + c] += 3.0f;
    v[last * kv_row + c] -= 5.0f;
  }
  causal_attention_forward(q, k, v, out, probs, shape);
  const std::int64_t q_row = shape.heads * shape.head_dim;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const bool same = std::equal(out.begin() + t * q_row, out.begin() + (t + 1) * q_row, before.begin() + t * q_row);
    EXPECT_EQ(same, t != last) << "token " << t;
  }
  for (std::int64_t i = 0; i < shape.sequence; ++i) {
    for (std::int64_t j = i + 1; j < shape.sequence; ++j) EXPECT_EQ(probs[i * shape.sequence + j], 0.0f);
  }
}

TEST(NnTransformerOps, RotaryTurnsPairsByPositionAndItsBackwardIsItsDerivative) {
  const std::int64_t batch = 2, sequence = 3, heads = 2, head_dim = 4;
  const std::vector<float> original = random_values(batch * sequence * heads * head_dim, 21);
  std::vector<float> x = original;
  rotary_forward(x, batch, sequence, heads, head_dim);
  // Position 0 of each sequence stays; position p turns pair (0, 2) by p radians and (1, 3) by p / 100.
  for (std::int64_t c = 0; c < heads * head_dim; ++c) EXPECT_EQ(x[c], original[c]);
  const std::int64_t row = sequence + 2;  // the second sequence's position 2
  const float* in = original.data() + row * heads * head_dim;
  const float* turned = x.data() + row * heads * head_dim;
  EXPECT_NEAR(turned[0], in[0] * std::cos(2.0) - in[2] * std::sin(2.0), 1e-6);
  EXPECT_NEAR(turned[3], in[3] * std::cos(0.02) + in[1] * std::sin(0.02), 1e-6);
  // Backward turns back: the forward is orthogonal.
  rotary_backward(x, batch, sequence, heads, head_dim);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], original[i], 1e-6);
  std::vector<float> y = original;
  const std::vector<float> r = random_values(y.size(), 22);
  std::vector<float> d_x = r;
  rotary_backward(d_x, batch, sequence, heads, head_dim);
  expect_gradient("d_x", y, d_x, [&] {
    std::vector<float> turned_y = y;
    rotary_forward(turned_y, batch, sequence, heads, head_dim);
    return weighted_sum(r, turned_y);
  });
  expect_input_error([&] { rotary_forward(x, batch, sequence, heads * head_dim, 1); }, "head_dim = 1 is odd");
}

TEST(NnTransformerOps, GeluBackwardIsItsDerivative) {
  std::vector<float> x = random_values(kTokens * kHidden, 23, -4.0f, 4.0f);
  std::vector<float> y(x.size());
  gelu_forward(std::vector<float>{0.0f, 10.0f, -10.0f}, std::span<float>(y).first(3));
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], 10.0f);
  EXPECT_NEAR(y[2], 0.0f, 1e-6);
  const std::vector<float> r = random_values(x.size(), 24);
  std::vector<float> d_x(x.size());
  gelu_backward(x, r, d_x);
  expect_gradient("d_x", x, d_x, [&] {
    gelu_forward(x, y);
    return weighted_sum(r, y);
  });
}

TEST(NnTransformerOps, SwigluBackwardIsItsDerivative) {
  const std::int64_t ffn = 4;
  std::vector<float> in = random_values(kTokens * 2 * ffn, 25, -3.0f, 3.0f);
  std::vector<float> out(kTokens * ffn);
  swiglu_forward(in, out, kTokens, ffn);
  const float gate = in[2 * ffn + 1], up = in[2 * ffn + ffn + 1];  // token 1, column 1 of each half
  EXPECT_NEAR(out[ffn + 1], gate / (1.0f + std::exp(-gate)) * up, 1e-6);
  const std::vector<float> r = random_values(out.size(), 26);
  std::vector<float> d_in(in.size());
  swiglu_backward(in, r, d_in, kTokens, ffn);
  expect_gradient("d_in", in, d_in, [&] {
    swiglu_forward(in, out, kTokens, ffn);
    return weighted_sum(r, out);
  });
}

TEST(NnTransformerOps, CrossEntropyOfUniformLogitsIsLogVAndItsGradientIsItsDerivative) {
  const std::int64_t vocabulary = 7;
  const std::vector<std::int32_t> targets = {0, 6, 3, 3, 1, 2};
  std::vector<float> logits(kTokens * vocabulary, 0.25f);
  std::vector<float> d_logits(logits.size());
  EXPECT_NEAR(cross_entropy_forward(logits, targets, d_logits, kTokens, vocabulary), std::log(7.0), 1e-12);
  EXPECT_FLOAT_EQ(d_logits[0], (1.0f / 7.0f - 1.0f) / kTokens);
  EXPECT_FLOAT_EQ(d_logits[1], 1.0f / 7.0f / kTokens);
  // Large logits: the maximum is subtracted first, so nothing overflows.
  std::vector<float> large(logits.size(), 1e4f);
  large[0] = 1e4f + 1.0f;
  const double loss = cross_entropy_forward(large, targets, d_logits, kTokens, vocabulary);
  EXPECT_TRUE(std::isfinite(loss));
  for (const float d : d_logits) EXPECT_TRUE(std::isfinite(d));
  logits = random_values(logits.size(), 27, -3.0f, 3.0f);
  cross_entropy_forward(logits, targets, d_logits, kTokens, vocabulary);
  expect_gradient("d_logits", logits, d_logits,
                  [&] { return cross_entropy_forward(logits, targets, {}, kTokens, vocabulary); });
  expect_input_error([&] { cross_entropy_forward(logits, std::vector<std::int32_t>(kTokens, 7), {}, kTokens, 7); },
                     "cross_entropy_forward: targets[0] = 7 is outside [0, 7)");
}

TEST(NnTransformerOps, AdamWFirstStepMovesEachParameterByTheRateAgainstItsGradientPlusDecay) {
  const std::vector<float> start = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f};
  const std::vector<float> grads = {0.001f, -5.0f, 20.0f, -0.3f, 1e-4f};
  std::vector<float> params = start;
  std::vector<float> m(params.size(), 0.0f), v(params.size(), 0.0f);
  AdamWOptions options;
  options.learning_rate = 0.01f;
  options.weight_decay = 0.1f;
  adamw_step(params, grads, m, v, 1, options);
  for (std::size_t i = 0; i < params.size(); ++i) {
    // Bias correction makes m_hat = g and v_hat = g^2: the step is lr g / (|g| + eps), about lr sign(g).
    const double sign = grads[i] > 0 ? 1.0 : -1.0;
    const double expected = start[i] * (1.0 - 0.01 * 0.1) - 0.01 * sign;
    EXPECT_NEAR(params[i], expected, 1e-5) << "expected " << expected;
    EXPECT_FLOAT_EQ(m[i], (1.0f - 0.9f) * grads[i]);
    EXPECT_FLOAT_EQ(v[i], (1.0f - 0.999f) * grads[i] * grads[i]);
  }
  expect_input_error([&] { adamw_step(params, grads, m, v, 0, options); }, "adamw_step: step = 0");
}

// Each kernel at sizes that take the OpenMP (and OpenBLAS) threads, twice on one thread and once on two: the same
// bits every time.
TEST(NnTransformerOps, EveryKernelGivesTheSameBitsOnEveryRunAndThreadCount) {
  const std::int64_t tokens = 256, hidden = 256, vocabulary = 512;
  const AttentionShape shape{2, 128, 4, 2, 32};
  const std::vector<float> x = random_values(tokens * hidden, 30);
  const std::vector<float> w = random_values(hidden * hidden, 31);
  const std::vector<float> gamma = random_values(hidden, 32);
  const std::vector<float> d_y = random_values(tokens * hidden, 33);
  const std::vector<float> q = random_values(tokens * shape.heads * shape.head_dim, 34);
  const std::vector<float> kv = random_values(tokens * shape.kv_heads * shape.head_dim, 35);
  const std::vector<float> logits = random_values(tokens * vocabulary, 36, -4.0f, 4.0f);
  std::vector<std::int32_t> ids(tokens);
  for (std::int64_t t = 0; t < tokens; ++t) ids[t] = static_cast<std::int32_t>((t * 37) % vocabulary);

  const auto run_all = [&] {
    std::vector<std::vector<float>> results;
    const auto keep = [&](std::vector<float> values) { results.push_back(std::move(values)); };
    std::vector<float> y(tokens * hidden), d_x(y.size()), d_w(w.size(), 0.0f), d_b(hidden, 0.0f);
    std::vector<float> mean(tokens), rstd(tokens), d_gamma(hidden, 0.0f), d_beta(hidden, 0.0f);
    linear_forward(x, w, gamma, y, tokens, hidden, hidden);
    linear_backward(x, w, d_y, d_x, d_w, d_b, tokens, hidden, hidden);
    keep(y), keep(d_x), keep(d_w), keep(d_b);
    layer_norm_forward(x, gamma, gamma, y, mean, rstd, tokens, hidden);
    layer_norm_backward(x, gamma, mean, rstd, d_y, d_x, d_gamma, d_beta, tokens, hidden);
    keep(y), keep(mean), keep(rstd), keep(d_x), keep(d_gamma), keep(d_beta);
    rms_norm_forward(x, gamma, y, rstd, tokens, hidden);
    rms_norm_backward(x, gamma, rstd, d_y, d_x, d_gamma, tokens, hidden);
    keep(y), keep(rstd), keep(d_x), keep(d_gamma);
    gelu_forward(x, y);
    gelu_backward(x, d_y, d_x);
    keep(y), keep(d_x);
    std::vector<float> half(tokens * hidden / 2);
    swiglu_forward(x, half, tokens, hidden / 2);
    swiglu_backward(x, std::span<const float>(d_y).first(half.size()), d_x, tokens, hidden / 2);
    keep(half), keep(d_x);
    std::vector<float> out(q.size()), probs(shape.batch * shape.heads * shape.sequence * shape.sequence);
    std::vector<float> d_q(q.size()), d_k(kv.size()), d_v(kv.size());
    causal_attention_forward(q, kv, kv, out, probs, shape);
    causal_attention_backward(q, kv, kv, probs, std::span<const float>(d_y).first(out.size()), d_q, d_k, d_v, shape);
    keep(out), keep(probs), keep(d_q), keep(d_k), keep(d_v);
    std::vector<float> turned = q;
    rotary_forward(turned, shape.batch, shape.sequence, shape.heads, shape.head_dim);
    keep(turned);
    std::vector<float> d_logits(logits.size()), table(vocabulary * hidden, 0.0f);
    const double loss = cross_entropy_forward(logits, ids, d_logits, tokens, vocabulary);
    keep(d_logits), keep({static_cast<float>(loss), static_cast<float>(loss - static_cast<float>(loss))});
    embedding_forward(logits, ids, y, vocabulary, hidden);
    embedding_backward(ids, d_y, table, vocabulary, hidden);
    keep(y), keep(table);
    std::vector<float> params = x, m(x.size(), 0.0f), v(x.size(), 0.0f);
    adamw_step(params, d_y, m, v, 1, AdamWOptions{.weight_decay = 0.1f});
    adamw_step(params, d_y, m, v, 2, AdamWOptions{.weight_decay = 0.1f});
    keep(params), keep(m), keep(v);
    return results;
  };

  const int threads_before = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto first = run_all();
  const auto second = run_all();
  omp_set_num_threads(2);
  const auto two_threads = run_all();
  omp_set_num_threads(threads_before);
  ASSERT_EQ(first.size(), two_threads.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(same_bits(first[i], second[i])) << "result " << i << " differs between runs";
    EXPECT_TRUE(same_bits(first[i], two_threads[i])) << "result " << i << " differs between 1 and 2 threads";
  }
}

TEST(NnTransformerOps, WrongSizesThrowInputErrorNamingTheFunctionAndSizes) {
  std::vector<float> a(47), b(kHidden), c(kHidden), y(48), mean(kTokens), rstd(kTokens);
  expect_input_error([&] { layer_norm_forward(a, b, c, y, mean, rstd, kTokens, kHidden); },
                     "layer_norm_forward: x holds 47 values, expected tokens x hidden = 6 x 8 = 48");
  expect_input_error([&] { rms_norm_forward(y, std::vector<float>(7), y, rstd, kTokens, kHidden); },
                     "rms_norm_forward: gamma holds 7 values, expected hidden = 8");
  expect_input_error([&] { linear_forward(y, std::vector<float>(kHidden * 3), std::vector<float>(2), a, 6, 8, 3); },
                     "linear_forward: bias holds 2 values, expected out (or empty) = 3");
  expect_input_error([&] { linear_backward(y, y, y, {}, y, {}, 6, 8, 3); }, "linear_backward: w holds 48 values");
  std::vector<float> q(6 * 8), kv(6 * 4), probs(2 * 2 * 3 * 3);
  expect_input_error(
      [&] {
        causal_attention_forward(q, kv, kv, q, probs, AttentionShape{2, 3, 2, 2, 4});
      },
      "causal_attention_forward: k holds 24 values, expected batch*sequence x kv_heads*head_dim");
  expect_input_error(
      [&] {
        causal_attention_forward(q, kv, kv, q, probs, AttentionShape{2, 3, 3, 2, 4});
      },
      "kv_heads dividing heads");
  expect_input_error([&] { gelu_backward(a, y, y); }, "gelu_backward: d_y holds 48 values, expected x's size");
  expect_input_error([&] { swiglu_forward(y, y, 6, 4); }, "swiglu_forward: out holds 48 values");
  expect_input_error([&] { adamw_step(y, a, y, y, 1, {}); }, "adamw_step: grads holds 47 values");
  expect_input_error([&] { embedding_forward(y, std::vector<std::int32_t>{0}, b, 6, -8); },
                     "embedding_forward: hidden = -8 is negative");
}

}  // namespace
}  // namespace dsgd::nn
