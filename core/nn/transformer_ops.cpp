// A transformer's CPU kernels (core/nn/transformer_ops.hpp, docs/nn.md "Transformer kernels (CPU)").
// Determinism: `omp parallel for` only over rows, heads or elements whose results are independent; each sum runs
// in one thread in a fixed order (row statistics in double), and a parameter's gradient sums its tokens in order.
// Sizes are checked before any parallel region: an exception must not leave one.

#include "core/nn/transformer_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace dsgd::nn {
namespace {

// Below this many floats of work a loop stays on one thread: an OpenMP barrier costs more than the loop.
constexpr std::int64_t kParallelWork = 1 << 15;

std::string dims_text(std::initializer_list<std::int64_t> dims) {
  std::string text;
  for (const std::int64_t d : dims) text += (text.empty() ? "" : " x ") + std::to_string(d);
  return text;
}

void require_dims(std::string_view function, std::initializer_list<std::pair<const char*, std::int64_t>> dims) {
  for (const auto& [name, value] : dims) {
    if (value < 0) {
      throw InputError(std::string(function) + ": " + name + " = " + std::to_string(value) + " is negative");
    }
  }
}

// `span_name` must hold the product of `dims` values; `shape` names the dimensions ("tokens x hidden").
void require_size(std::string_view function, std::string_view span_name, std::size_t actual, std::string_view shape,
                  std::initializer_list<std::int64_t> dims) {
  std::int64_t expected = 1;
  for (const std::int64_t d : dims) expected *= d;
  if (static_cast<std::int64_t>(actual) != expected) {
    // "expected tokens x hidden = 6 x 8 = 48", or "expected hidden = 8" for one dimension.
    const std::string product = dims.size() > 1 ? " = " + std::to_string(expected) : "";
    throw InputError(std::string(function) + ": " + std::string(span_name) + " holds " + std::to_string(actual) +
                     " values, expected " + std::string(shape) + " = " + dims_text(dims) + product);
  }
}

void require_ids(std::string_view function, std::string_view span_name, std::span<const std::int32_t> ids,
                 std::int64_t vocabulary) {
  for (std::size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= vocabulary) {
      throw InputError(std::string(function) + ": " + std::string(span_name) + "[" + std::to_string(t) +
                       "] = " + std::to_string(ids[t]) + " is outside [0, " + std::to_string(vocabulary) + ")");
    }
  }
}

bool parallel(std::int64_t work) { return work >= kParallelWork; }

}  // namespace

// ---- Embedding ----------------------------------------------------------------------------------------------

void embedding_forward(std::span<const float> table, std::span<const std::int32_t> ids, std::span<float> out,
                       std::int64_t vocabulary, std::int64_t hidden) {
  constexpr std::string_view kName = "embedding_forward";
  const auto tokens = static_cast<std::int64_t>(ids.size());
  require_dims(kName, {{"vocabulary", vocabulary}, {"hidden", hidden}});
  require_size(kName, "table", table.size(), "vocabulary x hidden", {vocabulary, hidden});
  require_size(kName, "out", out.size(), "tokens x hidden", {tokens, hidden});
  require_ids(kName, "ids", ids, vocabulary);
#pragma omp parallel for schedule(static) if (parallel(tokens * hidden))
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* row = table.data() + ids[t] * hidden;
    std::copy(row, row + hidden, out.data() + t * hidden);
  }
}

void embedding_backward(std::span<const std::int32_t> ids, std::span<const float> d_out, std::span<float> d_table,
                        std::int64_t vocabulary, std::int64_t hidden) {
  constexpr std::string_view kName = "embedding_backward";
  const auto tokens = static_cast<std::int64_t>(ids.size());
  require_dims(kName, {{"vocabulary", vocabulary}, {"hidden", hidden}});
  require_size(kName, "d_out", d_out.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "d_table", d_table.size(), "vocabulary x hidden", {vocabulary, hidden});
  require_ids(kName, "ids", ids, vocabulary);
  // Serial in token order: a row that several tokens share sums them in that order.
  for (std::int64_t t = 0; t < tokens; ++t) {
    float* row = d_table.data() + ids[t] * hidden;
    const float* g = d_out.data() + t * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) row[j] += g[j];
  }
}

// ---- Normalisation ------------------------------------------------------------------------------------------

void layer_norm_forward(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
                        std::span<float> y, std::span<float> mean, std::span<float> rstd, std::int64_t tokens,
                        std::int64_t hidden, float eps) {
  constexpr std::string_view kName = "layer_norm_forward";
  require_dims(kName, {{"tokens", tokens}, {"hidden", hidden}});
  require_size(kName, "x", x.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "y", y.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "gamma", gamma.size(), "hidden", {hidden});
  require_size(kName, "beta", beta.size(), "hidden", {hidden});
  require_size(kName, "mean", mean.size(), "tokens", {tokens});
  require_size(kName, "rstd", rstd.size(), "tokens", {tokens});
#pragma omp parallel for schedule(static) if (parallel(tokens * hidden))
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* xr = x.data() + t * hidden;
    double sum = 0.0;
    for (std::int64_t j = 0; j < hidden; ++j) sum += xr[j];
    const double mu = hidden > 0 ? sum / static_cast<double>(hidden) : 0.0;
    double squares = 0.0;
    for (std::int64_t j = 0; j < hidden; ++j) squares += (xr[j] - mu) * (xr[j] - mu);
    const double variance = hidden > 0 ? squares / static_cast<double>(hidden) : 0.0;
    const auto m = static_cast<float>(mu);
    const auto r = static_cast<float>(1.0 / std::sqrt(variance + eps));
    mean[t] = m;
    rstd[t] = r;
    float* yr = y.data() + t * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) yr[j] = (xr[j] - m) * r * gamma[j] + beta[j];
  }
}

void layer_norm_backward(std::span<const float> x, std::span<const float> gamma, std::span<const float> mean,
                         std::span<const float> rstd, std::span<const float> d_y, std::span<float> d_x,
                         std::span<float> d_gamma, std::span<float> d_beta, std::int64_t tokens, std::int64_t hidden) {
  constexpr std::string_view kName = "layer_norm_backward";
  require_dims(kName, {{"tokens", tokens}, {"hidden", hidden}});
  require_size(kName, "x", x.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "d_y", d_y.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "d_x", d_x.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "gamma", gamma.size(), "hidden", {hidden});
  require_size(kName, "d_gamma", d_gamma.size(), "hidden", {hidden});
  require_size(kName, "d_beta", d_beta.size(), "hidden", {hidden});
  require_size(kName, "mean", mean.size(), "tokens", {tokens});
  require_size(kName, "rstd", rstd.size(), "tokens", {tokens});
  // d_x, row by row: rstd (g - mean(g) - xhat mean(g xhat)), g = d_y gamma.
#pragma omp parallel for schedule(static) if (parallel(tokens * hidden))
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* xr = x.data() + t * hidden;
    const float* dyr = d_y.data() + t * hidden;
    const float m = mean[t];
    const float r = rstd[t];
    double sum_g = 0.0;
    double sum_gx = 0.0;
    for (std::int64_t j = 0; j < hidden; ++j) {
      const double g = static_cast<double>(dyr[j]) * gamma[j];
      sum_g += g;
      sum_gx += g * ((xr[j] - m) * r);
    }
    const auto mean_g = static_cast<float>(sum_g / static_cast<double>(hidden));
    const auto mean_gx = static_cast<float>(sum_gx / static_cast<double>(hidden));
    float* dxr = d_x.data() + t * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) {
      const float xhat = (xr[j] - m) * r;
      dxr[j] = r * (dyr[j] * gamma[j] - mean_g - xhat * mean_gx);
    }
  }
  // Parameter gradients in token order.
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* xr = x.data() + t * hidden;
    const float* dyr = d_y.data() + t * hidden;
    const float m = mean[t];
    const float r = rstd[t];
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) {
      d_gamma[j] += dyr[j] * ((xr[j] - m) * r);
      d_beta[j] += dyr[j];
    }
  }
}

void rms_norm_forward(std::span<const float> x, std::span<const float> gamma, std::span<float> y, std::span<float> rstd,
                      std::int64_t tokens, std::int64_t hidden, float eps) {
  constexpr std::string_view kName = "rms_norm_forward";
  require_dims(kName, {{"tokens", tokens}, {"hidden", hidden}});
  require_size(kName, "x", x.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "y", y.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "gamma", gamma.size(), "hidden", {hidden});
  require_size(kName, "rstd", rstd.size(), "tokens", {tokens});
#pragma omp parallel for schedule(static) if (parallel(tokens * hidden))
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* xr = x.data() + t * hidden;
    double squares = 0.0;
    for (std::int64_t j = 0; j < hidden; ++j) squares += static_cast<double>(xr[j]) * xr[j];
    const double mean_square = hidden > 0 ? squares / static_cast<double>(hidden) : 0.0;
    const auto r = static_cast<float>(1.0 / std::sqrt(mean_square + eps));
    rstd[t] = r;
    float* yr = y.data() + t * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) yr[j] = xr[j] * r * gamma[j];
  }
}

void rms_norm_backward(std::span<const float> x, std::span<const float> gamma, std::span<const float> rstd,
                       std::span<const float> d_y, std::span<float> d_x, std::span<float> d_gamma, std::int64_t tokens,
                       std::int64_t hidden) {
  constexpr std::string_view kName = "rms_norm_backward";
  require_dims(kName, {{"tokens", tokens}, {"hidden", hidden}});
  require_size(kName, "x", x.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "d_y", d_y.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "d_x", d_x.size(), "tokens x hidden", {tokens, hidden});
  require_size(kName, "gamma", gamma.size(), "hidden", {hidden});
  require_size(kName, "d_gamma", d_gamma.size(), "hidden", {hidden});
  require_size(kName, "rstd", rstd.size(), "tokens", {tokens});
  // d_x, row by row: rstd (g - xhat mean(g xhat)), g = d_y gamma, xhat = x rstd.
#pragma omp parallel for schedule(static) if (parallel(tokens * hidden))
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* xr = x.data() + t * hidden;
    const float* dyr = d_y.data() + t * hidden;
    const float r = rstd[t];
    double sum_gx = 0.0;
    for (std::int64_t j = 0; j < hidden; ++j) sum_gx += static_cast<double>(dyr[j]) * gamma[j] * (xr[j] * r);
    const auto mean_gx = static_cast<float>(sum_gx / static_cast<double>(hidden));
    float* dxr = d_x.data() + t * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) dxr[j] = r * (dyr[j] * gamma[j] - (xr[j] * r) * mean_gx);
  }
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* xr = x.data() + t * hidden;
    const float* dyr = d_y.data() + t * hidden;
    const float r = rstd[t];
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) d_gamma[j] += dyr[j] * (xr[j] * r);
  }
}

// ---- Linear -------------------------------------------------------------------------------------------------
// dsgd's own loops rather than OpenBLAS SGEMM: OpenBLAS 0.3.21 gave different bits on 1 and 2 OpenMP threads for a
// 256 x 256 x 256 product (NnTransformerOps.EveryKernelGivesTheSameBitsOnEveryRunAndThreadCount), and every sum here
// must run in one fixed order.

namespace {

// C[r, :cols] += sum_p a(r, p) B[p, :cols] for r < rows, p = 0, 1, ..., inner - 1 in that order (starting from C's
// value), with a(r, p) = a[r * a_row + p * a_inner]: A row-major (a_row = inner, a_inner = 1) or transposed. C and
// B row-major with leading dimensions ldc, ldb. Threads take tiles of C: each element is summed by one of them.
void multiply_accumulate(float* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols, const float* a,
                         std::int64_t a_row, std::int64_t a_inner, std::int64_t inner, const float* b,
                         std::int64_t ldb) {
  constexpr std::int64_t kRows = 4;
  constexpr std::int64_t kCols = 64;
  const std::int64_t row_blocks = (rows + kRows - 1) / kRows;
  const std::int64_t col_blocks = (cols + kCols - 1) / kCols;
#pragma omp parallel for collapse(2) schedule(static) if (parallel(rows * cols * inner / 16))
  for (std::int64_t rb = 0; rb < row_blocks; ++rb) {
    for (std::int64_t cb = 0; cb < col_blocks; ++cb) {
      const std::int64_t r0 = rb * kRows;
      const std::int64_t c0 = cb * kCols;
      const std::int64_t nr = std::min(kRows, rows - r0);
      const std::int64_t nc = std::min(kCols, cols - c0);
      float tile[kRows][kCols] = {};
      for (std::int64_t r = 0; r < nr; ++r) std::copy_n(c + (r0 + r) * ldc + c0, nc, tile[r]);
      if (nr == kRows && nc == kCols) {
        // The whole tile: fixed trip counts the compiler vectorises.
        for (std::int64_t p = 0; p < inner; ++p) {
          const float* bp = b + p * ldb + c0;
          for (std::int64_t r = 0; r < kRows; ++r) {
            const float ar = a[(r0 + r) * a_row + p * a_inner];
#pragma omp simd
            for (std::int64_t j = 0; j < kCols; ++j) tile[r][j] += ar * bp[j];
          }
        }
      } else {
        for (std::int64_t p = 0; p < inner; ++p) {
          const float* bp = b + p * ldb + c0;
          for (std::int64_t r = 0; r < nr; ++r) {
            const float ar = a[(r0 + r) * a_row + p * a_inner];
#pragma omp simd
            for (std::int64_t j = 0; j < nc; ++j) tile[r][j] += ar * bp[j];
          }
        }
      }
      for (std::int64_t r = 0; r < nr; ++r) std::copy_n(tile[r], nc, c + (r0 + r) * ldc + c0);
    }
  }
}

}  // namespace

void linear_forward(std::span<const float> x, std::span<const float> w, std::span<const float> bias, std::span<float> y,
                    std::int64_t tokens, std::int64_t in, std::int64_t out) {
  constexpr std::string_view kName = "linear_forward";
  require_dims(kName, {{"tokens", tokens}, {"in", in}, {"out", out}});
  require_size(kName, "x", x.size(), "tokens x in", {tokens, in});
  require_size(kName, "w", w.size(), "in x out", {in, out});
  if (!bias.empty()) require_size(kName, "bias", bias.size(), "out (or empty)", {out});
  require_size(kName, "y", y.size(), "tokens x out", {tokens, out});
  for (std::int64_t t = 0; t < tokens; ++t) {
    if (bias.empty()) {
      std::fill_n(y.data() + t * out, out, 0.0f);
    } else {
      std::copy(bias.begin(), bias.end(), y.data() + t * out);
    }
  }
  // y += x w
  multiply_accumulate(y.data(), out, tokens, out, x.data(), in, 1, in, w.data(), out);
}

void linear_backward(std::span<const float> x, std::span<const float> w, std::span<const float> d_y,
                     std::span<float> d_x, std::span<float> d_w, std::span<float> d_bias, std::int64_t tokens,
                     std::int64_t in, std::int64_t out) {
  constexpr std::string_view kName = "linear_backward";
  require_dims(kName, {{"tokens", tokens}, {"in", in}, {"out", out}});
  require_size(kName, "x", x.size(), "tokens x in", {tokens, in});
  require_size(kName, "w", w.size(), "in x out", {in, out});
  require_size(kName, "d_y", d_y.size(), "tokens x out", {tokens, out});
  if (!d_x.empty()) require_size(kName, "d_x", d_x.size(), "tokens x in (or empty)", {tokens, in});
  require_size(kName, "d_w", d_w.size(), "in x out", {in, out});
  if (!d_bias.empty()) require_size(kName, "d_bias", d_bias.size(), "out (or empty)", {out});
  // d_w += x^T d_y  (in x out), tokens in order.
  multiply_accumulate(d_w.data(), out, in, out, x.data(), 1, in, tokens, d_y.data(), out);
  // d_x = d_y w^T  (tokens x in), through w^T (out x in) so the inner loop runs along rows.
  if (!d_x.empty()) {
    std::vector<float> w_t(static_cast<std::size_t>(in * out));
    for (std::int64_t i = 0; i < in; ++i) {
      for (std::int64_t j = 0; j < out; ++j) w_t[j * in + i] = w[i * out + j];
    }
    std::fill(d_x.begin(), d_x.end(), 0.0f);
    multiply_accumulate(d_x.data(), in, tokens, in, d_y.data(), out, 1, out, w_t.data(), in);
  }
  // d_bias += column sums, rows in order.
  if (!d_bias.empty()) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const float* g = d_y.data() + t * out;
#pragma omp simd
      for (std::int64_t j = 0; j < out; ++j) d_bias[j] += g[j];
    }
  }
}

// ---- Causal self-attention ----------------------------------------------------------------------------------

namespace {

void require_attention(std::string_view function, const AttentionShape& s) {
  require_dims(function, {{"batch", s.batch},
                          {"sequence", s.sequence},
                          {"heads", s.heads},
                          {"kv_heads", s.kv_heads},
                          {"head_dim", s.head_dim}});
  if (s.heads < 1 || s.kv_heads < 1 || s.head_dim < 1 || s.heads % s.kv_heads != 0) {
    throw InputError(std::string(function) + ": heads = " + std::to_string(s.heads) +
                     ", kv_heads = " + std::to_string(s.kv_heads) + ", head_dim = " + std::to_string(s.head_dim) +
                     ": expected positive sizes and kv_heads dividing heads");
  }
}

}  // namespace

void causal_attention_forward(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                              std::span<float> out, std::span<float> probs, const AttentionShape& shape) {
  constexpr std::string_view kName = "causal_attention_forward";
  require_attention(kName, shape);
  const std::int64_t batch = shape.batch;
  const std::int64_t s = shape.sequence;
  const std::int64_t heads = shape.heads;
  const std::int64_t kv_heads = shape.kv_heads;
  const std::int64_t d = shape.head_dim;
  require_size(kName, "q", q.size(), "batch*sequence x heads*head_dim", {batch * s, heads * d});
  require_size(kName, "k", k.size(), "batch*sequence x kv_heads*head_dim", {batch * s, kv_heads * d});
  require_size(kName, "v", v.size(), "batch*sequence x kv_heads*head_dim", {batch * s, kv_heads * d});
  require_size(kName, "out", out.size(), "batch*sequence x heads*head_dim", {batch * s, heads * d});
  require_size(kName, "probs", probs.size(), "batch x heads x sequence x sequence", {batch, heads, s, s});
  const std::int64_t group = heads / kv_heads;
  const std::int64_t q_stride = heads * d;
  const std::int64_t kv_stride = kv_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // One (sequence, head) per iteration: its probabilities and outputs belong to it alone.
#pragma omp parallel for schedule(static) if (parallel(batch * heads * s * s * d / 2))
  for (std::int64_t bh = 0; bh < batch * heads; ++bh) {
    const std::int64_t b = bh / heads;
    const std::int64_t h = bh % heads;
    const std::int64_t g = h / group;
    const float* q0 = q.data() + b * s * q_stride + h * d;
    const float* k0 = k.data() + b * s * kv_stride + g * d;
    const float* v0 = v.data() + b * s * kv_stride + g * d;
    float* o0 = out.data() + b * s * q_stride + h * d;
    float* p0 = probs.data() + bh * s * s;
    for (std::int64_t i = 0; i < s; ++i) {
      const float* qi = q0 + i * q_stride;
      float* p = p0 + i * s;
      // Scores of keys 0..i, their softmax; the masked ones are 0.
      float max_score = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j <= i; ++j) {
        const float* kj = k0 + j * kv_stride;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (std::int64_t c = 0; c < d; ++c) dot += qi[c] * kj[c];
        p[j] = dot * scale;
        max_score = std::max(max_score, p[j]);
      }
      double sum = 0.0;
      for (std::int64_t j = 0; j <= i; ++j) {
        p[j] = std::exp(p[j] - max_score);
        sum += p[j];
      }
      const auto inverse = static_cast<float>(1.0 / sum);
      for (std::int64_t j = 0; j <= i; ++j) p[j] *= inverse;
      std::fill(p + i + 1, p + s, 0.0f);
      // out_i = sum_j p_j v_j, j in order.
      float* oi = o0 + i * q_stride;
      std::fill_n(oi, d, 0.0f);
      for (std::int64_t j = 0; j <= i; ++j) {
        const float* vj = v0 + j * kv_stride;
        const float pj = p[j];
#pragma omp simd
        for (std::int64_t c = 0; c < d; ++c) oi[c] += pj * vj[c];
      }
    }
  }
}

void causal_attention_backward(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                               std::span<const float> probs, std::span<const float> d_out, std::span<float> d_q,
                               std::span<float> d_k, std::span<float> d_v, const AttentionShape& shape) {
  constexpr std::string_view kName = "causal_attention_backward";
  require_attention(kName, shape);
  const std::int64_t batch = shape.batch;
  const std::int64_t s = shape.sequence;
  const std::int64_t heads = shape.heads;
  const std::int64_t kv_heads = shape.kv_heads;
  const std::int64_t d = shape.head_dim;
  require_size(kName, "q", q.size(), "batch*sequence x heads*head_dim", {batch * s, heads * d});
  require_size(kName, "k", k.size(), "batch*sequence x kv_heads*head_dim", {batch * s, kv_heads * d});
  require_size(kName, "v", v.size(), "batch*sequence x kv_heads*head_dim", {batch * s, kv_heads * d});
  require_size(kName, "probs", probs.size(), "batch x heads x sequence x sequence", {batch, heads, s, s});
  require_size(kName, "d_out", d_out.size(), "batch*sequence x heads*head_dim", {batch * s, heads * d});
  require_size(kName, "d_q", d_q.size(), "batch*sequence x heads*head_dim", {batch * s, heads * d});
  require_size(kName, "d_k", d_k.size(), "batch*sequence x kv_heads*head_dim", {batch * s, kv_heads * d});
  require_size(kName, "d_v", d_v.size(), "batch*sequence x kv_heads*head_dim", {batch * s, kv_heads * d});
  const std::int64_t group = heads / kv_heads;
  const std::int64_t q_stride = heads * d;
  const std::int64_t kv_stride = kv_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // One (sequence, kv head) per iteration: it writes its query heads' d_q and sums their d_k, d_v in head order,
  // then query order.
#pragma omp parallel for schedule(static) if (parallel(batch * heads * s * s * d))
  for (std::int64_t bg = 0; bg < batch * kv_heads; ++bg) {
    const std::int64_t b = bg / kv_heads;
    const std::int64_t g = bg % kv_heads;
    const float* k0 = k.data() + b * s * kv_stride + g * d;
    const float* v0 = v.data() + b * s * kv_stride + g * d;
    float* dk0 = d_k.data() + b * s * kv_stride + g * d;
    float* dv0 = d_v.data() + b * s * kv_stride + g * d;
    for (std::int64_t j = 0; j < s; ++j) {
      std::fill_n(dk0 + j * kv_stride, d, 0.0f);
      std::fill_n(dv0 + j * kv_stride, d, 0.0f);
    }
    std::vector<float> d_score(static_cast<std::size_t>(s));
    for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
      const float* q0 = q.data() + b * s * q_stride + h * d;
      const float* do0 = d_out.data() + b * s * q_stride + h * d;
      float* dq0 = d_q.data() + b * s * q_stride + h * d;
      const float* p0 = probs.data() + (b * heads + h) * s * s;
      for (std::int64_t i = 0; i < s; ++i) {
        const float* p = p0 + i * s;
        const float* doi = do0 + i * q_stride;
        // d_p_j = d_out_i . v_j; d_score_j = p_j (d_p_j - sum_l p_l d_p_l), the softmax's backward.
        double weighted = 0.0;
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* vj = v0 + j * kv_stride;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (std::int64_t c = 0; c < d; ++c) dot += doi[c] * vj[c];
          d_score[j] = dot;
          weighted += static_cast<double>(p[j]) * dot;
        }
        const auto delta = static_cast<float>(weighted);
        for (std::int64_t j = 0; j <= i; ++j) d_score[j] = p[j] * (d_score[j] - delta) * scale;
        // d_q_i = sum_j d_score_j k_j; d_k_j += d_score_j q_i; d_v_j += p_j d_out_i.
        const float* qi = q0 + i * q_stride;
        float* dqi = dq0 + i * q_stride;
        std::fill_n(dqi, d, 0.0f);
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* kj = k0 + j * kv_stride;
          float* dkj = dk0 + j * kv_stride;
          float* dvj = dv0 + j * kv_stride;
          const float ds = d_score[j];
          const float pj = p[j];
#pragma omp simd
          for (std::int64_t c = 0; c < d; ++c) {
            dqi[c] += ds * kj[c];
            dkj[c] += ds * qi[c];
            dvj[c] += pj * doi[c];
          }
        }
      }
    }
  }
}

namespace {

// Turns every head's pairs (j, j + d/2) of x by +angle (sign 1) or -angle (sign -1).
void rotate(std::string_view function, std::span<float> x, std::int64_t batch, std::int64_t sequence,
            std::int64_t heads, std::int64_t head_dim, double base, float sign) {
  require_dims(function, {{"batch", batch}, {"sequence", sequence}, {"heads", heads}, {"head_dim", head_dim}});
  if (head_dim % 2 != 0) {
    throw InputError(std::string(function) + ": head_dim = " + std::to_string(head_dim) + " is odd");
  }
  require_size(function, "x", x.size(), "batch*sequence x heads*head_dim", {batch * sequence, heads * head_dim});
  const std::int64_t half = head_dim / 2;
  // cos and sin of p * base^(-2j/d), in double, for every position and pair.
  std::vector<float> cos_table(static_cast<std::size_t>(sequence * half));
  std::vector<float> sin_table(cos_table.size());
  for (std::int64_t j = 0; j < half; ++j) {
    const double frequency = std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
    for (std::int64_t p = 0; p < sequence; ++p) {
      const double angle = static_cast<double>(p) * frequency;
      cos_table[p * half + j] = static_cast<float>(std::cos(angle));
      sin_table[p * half + j] = sign * static_cast<float>(std::sin(angle));
    }
  }
  const std::int64_t rows = batch * sequence;
#pragma omp parallel for schedule(static) if (parallel(rows * heads * head_dim))
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int64_t p = row % sequence;
    const float* c = cos_table.data() + p * half;
    const float* sn = sin_table.data() + p * half;
    for (std::int64_t h = 0; h < heads; ++h) {
      float* x1 = x.data() + row * heads * head_dim + h * head_dim;
      float* x2 = x1 + half;
#pragma omp simd
      for (std::int64_t j = 0; j < half; ++j) {
        const float a = x1[j];
        const float b = x2[j];
        x1[j] = a * c[j] - b * sn[j];
        x2[j] = b * c[j] + a * sn[j];
      }
    }
  }
}

}  // namespace

void rotary_forward(std::span<float> x, std::int64_t batch, std::int64_t sequence, std::int64_t heads,
                    std::int64_t head_dim, double base) {
  rotate("rotary_forward", x, batch, sequence, heads, head_dim, base, 1.0f);
}

void rotary_backward(std::span<float> d_x, std::int64_t batch, std::int64_t sequence, std::int64_t heads,
                     std::int64_t head_dim, double base) {
  rotate("rotary_backward", d_x, batch, sequence, heads, head_dim, base, -1.0f);
}

// ---- Activations --------------------------------------------------------------------------------------------

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
}  // namespace

void gelu_forward(std::span<const float> x, std::span<float> y) {
  const auto n = static_cast<std::int64_t>(x.size());
  require_size("gelu_forward", "y", y.size(), "x's size", {n});
#pragma omp parallel for schedule(static) if (parallel(n * 8))
  for (std::int64_t i = 0; i < n; ++i) {
    const float a = x[i];
    y[i] = 0.5f * a * (1.0f + std::tanh(kSqrt2OverPi * (a + kGeluCubic * a * a * a)));
  }
}

void gelu_backward(std::span<const float> x, std::span<const float> d_y, std::span<float> d_x) {
  const auto n = static_cast<std::int64_t>(x.size());
  require_size("gelu_backward", "d_y", d_y.size(), "x's size", {n});
  require_size("gelu_backward", "d_x", d_x.size(), "x's size", {n});
#pragma omp parallel for schedule(static) if (parallel(n * 8))
  for (std::int64_t i = 0; i < n; ++i) {
    const float a = x[i];
    const float th = std::tanh(kSqrt2OverPi * (a + kGeluCubic * a * a * a));
    const float derivative =
        0.5f * (1.0f + th) + 0.5f * a * (1.0f - th * th) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * a * a);
    d_x[i] = d_y[i] * derivative;
  }
}

void swiglu_forward(std::span<const float> in, std::span<float> out, std::int64_t tokens, std::int64_t ffn) {
  constexpr std::string_view kName = "swiglu_forward";
  require_dims(kName, {{"tokens", tokens}, {"ffn", ffn}});
  require_size(kName, "in", in.size(), "tokens x 2*ffn", {tokens, 2 * ffn});
  require_size(kName, "out", out.size(), "tokens x ffn", {tokens, ffn});
#pragma omp parallel for schedule(static) if (parallel(tokens * ffn * 8))
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* gate = in.data() + t * 2 * ffn;
    const float* up = gate + ffn;
    float* o = out.data() + t * ffn;
    for (std::int64_t j = 0; j < ffn; ++j) {
      const float sigmoid = 1.0f / (1.0f + std::exp(-gate[j]));
      o[j] = gate[j] * sigmoid * up[j];
    }
  }
}

void swiglu_backward(std::span<const float> in, std::span<const float> d_out, std::span<float> d_in,
                     std::int64_t tokens, std::int64_t ffn) {
  constexpr std::string_view kName = "swiglu_backward";
  require_dims(kName, {{"tokens", tokens}, {"ffn", ffn}});
  require_size(kName, "in", in.size(), "tokens x 2*ffn", {tokens, 2 * ffn});
  require_size(kName, "d_out", d_out.size(), "tokens x ffn", {tokens, ffn});
  require_size(kName, "d_in", d_in.size(), "tokens x 2*ffn", {tokens, 2 * ffn});
#pragma omp parallel for schedule(static) if (parallel(tokens * ffn * 8))
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* gate = in.data() + t * 2 * ffn;
    const float* up = gate + ffn;
    const float* g = d_out.data() + t * ffn;
    float* d_gate = d_in.data() + t * 2 * ffn;
    float* d_up = d_gate + ffn;
    for (std::int64_t j = 0; j < ffn; ++j) {
      const float sigmoid = 1.0f / (1.0f + std::exp(-gate[j]));
      const float silu = gate[j] * sigmoid;
      // silu'(x) = sigmoid(x) (1 + x (1 - sigmoid(x)))
      d_gate[j] = g[j] * up[j] * sigmoid * (1.0f + gate[j] * (1.0f - sigmoid));
      d_up[j] = g[j] * silu;
    }
  }
}

// ---- Loss ---------------------------------------------------------------------------------------------------

double cross_entropy_forward(std::span<const float> logits, std::span<const std::int32_t> targets,
                             std::span<float> d_logits, std::int64_t tokens, std::int64_t vocabulary) {
  constexpr std::string_view kName = "cross_entropy_forward";
  require_dims(kName, {{"tokens", tokens}, {"vocabulary", vocabulary}});
  require_size(kName, "logits", logits.size(), "tokens x vocabulary", {tokens, vocabulary});
  require_size(kName, "targets", targets.size(), "tokens", {tokens});
  if (!d_logits.empty()) require_size(kName, "d_logits", d_logits.size(), "tokens x vocabulary", {tokens, vocabulary});
  require_ids(kName, "targets", targets, vocabulary);
  if (tokens == 0) return 0.0;
  std::vector<double> row_loss(static_cast<std::size_t>(tokens));
  const bool gradient = !d_logits.empty();
  const double inverse_tokens = 1.0 / static_cast<double>(tokens);
#pragma omp parallel for schedule(static) if (parallel(tokens * vocabulary * 4))
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* l = logits.data() + t * vocabulary;
    const float max_logit = *std::max_element(l, l + vocabulary);
    double sum = 0.0;
    for (std::int64_t c = 0; c < vocabulary; ++c) sum += std::exp(static_cast<double>(l[c]) - max_logit);
    row_loss[t] = std::log(sum) + max_logit - l[targets[t]];
    if (gradient) {
      float* d = d_logits.data() + t * vocabulary;
      const double scale = inverse_tokens / sum;
      for (std::int64_t c = 0; c < vocabulary; ++c) {
        d[c] = static_cast<float>(std::exp(static_cast<double>(l[c]) - max_logit) * scale);
      }
      d[targets[t]] -= static_cast<float>(inverse_tokens);
    }
  }
  double total = 0.0;
  for (const double loss : row_loss) total += loss;
  return total * inverse_tokens;
}

// ---- Optimiser ----------------------------------------------------------------------------------------------

void adamw_step(std::span<float> params, std::span<const float> grads, std::span<float> m, std::span<float> v,
                std::int64_t step, const AdamWOptions& options) {
  constexpr std::string_view kName = "adamw_step";
  const auto n = static_cast<std::int64_t>(params.size());
  require_size(kName, "grads", grads.size(), "params' size", {n});
  require_size(kName, "m", m.size(), "params' size", {n});
  require_size(kName, "v", v.size(), "params' size", {n});
  if (step < 1) throw InputError("adamw_step: step = " + std::to_string(step) + ", expected 1 or more");
  const float lr = options.learning_rate;
  const float b1 = options.beta1;
  const float b2 = options.beta2;
  const float eps = options.eps;
  const float decay = 1.0f - lr * options.weight_decay;
  const auto correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(b1), static_cast<double>(step)));
  const auto correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(b2), static_cast<double>(step)));
#pragma omp parallel for simd schedule(static) if (parallel(n * 4))
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grads[i];
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    const float m_hat = m[i] / correction1;
    const float v_hat = v[i] / correction2;
    params[i] = params[i] * decay - lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

}  // namespace dsgd::nn
