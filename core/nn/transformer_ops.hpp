#pragma once
// A transformer's kernels on the CPU, forward and backward, in plain fp32 on contiguous row-major spans: the
// building blocks of a GPT trained natively (docs/nn.md "Transformer kernels (CPU)"; the simulator counts the same
// kernels in core/transformer.hpp).
//
// Conventions shared by every function here:
//  * Shapes are given explicitly and every span must hold exactly the floats its shape says; a wrong size, a
//    negative dimension or an index out of range throws InputError naming the function, the span and the sizes.
//  * A backward pass writes (=) the gradients of its inputs (activations) and accumulates (+=) those of its
//    parameters (embedding table, norm scales, weights, biases), so micro-batches can add up their gradients.
//  * Deterministic: the same bits on every run and for every OpenMP thread count. Threads only split independent
//    rows, heads or elements; every sum runs in a fixed order (parameter gradients in token order).
//  * T is the number of tokens (rows); for attention T = batch x sequence, sequences stored one after the other.

#include <cstdint>
#include <span>

namespace dsgd::nn {

// ---- Embedding ----------------------------------------------------------------------------------------------
// out[t] = table[ids[t]]. table [vocabulary x hidden], ids [T], out [T x hidden]. An id outside [0, vocabulary)
// throws InputError.
void embedding_forward(std::span<const float> table, std::span<const std::int32_t> ids, std::span<float> out,
                       std::int64_t vocabulary, std::int64_t hidden);
// d_table[ids[t]] += d_out[t], in token order. d_out [T x hidden], d_table [vocabulary x hidden].
void embedding_backward(std::span<const std::int32_t> ids, std::span<const float> d_out, std::span<float> d_table,
                        std::int64_t vocabulary, std::int64_t hidden);

// ---- Normalisation ------------------------------------------------------------------------------------------
// Layer norm over each row: y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var + eps) with the biased
// variance. x, y [T x hidden]; gamma, beta [hidden]; mean, rstd [T] kept for the backward.
void layer_norm_forward(std::span<const float> x, std::span<const float> gamma, std::span<const float> beta,
                        std::span<float> y, std::span<float> mean, std::span<float> rstd, std::int64_t tokens,
                        std::int64_t hidden, float eps = 1e-5f);
// d_x (written) = rstd (g - mean(g) - xhat mean(g xhat)) with g = d_y gamma, xhat = (x - mean) rstd;
// d_gamma += sum_t d_y xhat, d_beta += sum_t d_y.
void layer_norm_backward(std::span<const float> x, std::span<const float> gamma, std::span<const float> mean,
                         std::span<const float> rstd, std::span<const float> d_y, std::span<float> d_x,
                         std::span<float> d_gamma, std::span<float> d_beta, std::int64_t tokens, std::int64_t hidden);

// RMSNorm (Llama): y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps). x, y [T x hidden]; gamma [hidden];
// rstd [T] kept for the backward.
void rms_norm_forward(std::span<const float> x, std::span<const float> gamma, std::span<float> y, std::span<float> rstd,
                      std::int64_t tokens, std::int64_t hidden, float eps = 1e-5f);
// d_x (written) = rstd (g - xhat mean(g xhat)) with g = d_y gamma, xhat = x rstd; d_gamma += sum_t d_y xhat.
void rms_norm_backward(std::span<const float> x, std::span<const float> gamma, std::span<const float> rstd,
                       std::span<const float> d_y, std::span<float> d_x, std::span<float> d_gamma, std::int64_t tokens,
                       std::int64_t hidden);

// ---- Linear -------------------------------------------------------------------------------------------------
// y = x w + bias. x [T x in], w [in x out] (row-major: a column of w per output), bias [out] or empty (none),
// y [T x out]. dsgd's own blocked loops, not BLAS: threads split the output, each element sums in a fixed order.
void linear_forward(std::span<const float> x, std::span<const float> w, std::span<const float> bias, std::span<float> y,
                    std::int64_t tokens, std::int64_t in, std::int64_t out);
// d_x = d_y w^T (written; empty: not computed, e.g. for a first layer), d_w += x^T d_y, d_bias += column sums of
// d_y in token order (empty when the layer has no bias).
void linear_backward(std::span<const float> x, std::span<const float> w, std::span<const float> d_y,
                     std::span<float> d_x, std::span<float> d_w, std::span<float> d_bias, std::int64_t tokens,
                     std::int64_t in, std::int64_t out);

// ---- Causal self-attention ----------------------------------------------------------------------------------
// `batch` sequences of `sequence` tokens; `heads` query heads of `head_dim`, sharing `kv_heads` key/value heads
// (grouped-query attention: query head i reads kv head i / (heads / kv_heads); kv_heads = heads is multi-head
// attention, 1 multi-query).
struct AttentionShape {
  std::int64_t batch = 1;
  std::int64_t sequence = 1;
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;
  std::int64_t head_dim = 1;
};
// Layouts: q and out [batch*sequence x heads*head_dim], k and v [batch*sequence x kv_heads*head_dim] (head h of
// token t at columns h*head_dim ...), probs [batch x heads x sequence x sequence].
// probs[b,h,i,j] = softmax_j(q_i . k_j / sqrt(head_dim)) over j <= i (0 for j > i: a token never sees a later
// one); out_i = sum_j probs[b,h,i,j] v_j. probs is kept for the backward.
void causal_attention_forward(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                              std::span<float> out, std::span<float> probs, const AttentionShape& shape);
// d_q, d_k, d_v (written) from d_out [as out], with forward's probs. A kv head's gradients sum its query heads'
// in head order.
void causal_attention_backward(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                               std::span<const float> probs, std::span<const float> d_out, std::span<float> d_q,
                               std::span<float> d_k, std::span<float> d_v, const AttentionShape& shape);

// Rotary position embedding (GPT-NeoX/Llama's half rotation), in place on x [batch*sequence x heads*head_dim]:
// within each head, the pair (j, j + head_dim/2) of the token at position p of its sequence turns by the angle
// p * base^(-2j/head_dim). Apply to q (heads) and to k (kv_heads). head_dim must be even.
void rotary_forward(std::span<float> x, std::int64_t batch, std::int64_t sequence, std::int64_t heads,
                    std::int64_t head_dim, double base = 10000.0);
// In place on d_x: the inverse rotation (the forward is orthogonal), so d_x turns from d_y into the input's
// gradient.
void rotary_backward(std::span<float> d_x, std::int64_t batch, std::int64_t sequence, std::int64_t heads,
                     std::int64_t head_dim, double base = 10000.0);

// ---- Activations --------------------------------------------------------------------------------------------
// GELU, tanh approximation (GPT-2): y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), element-wise; x, y the same
// size.
void gelu_forward(std::span<const float> x, std::span<float> y);
// d_x = d_y * gelu'(x) (written).
void gelu_backward(std::span<const float> x, std::span<const float> d_y, std::span<float> d_x);

// SwiGLU (Llama's MLP): in [T x 2*ffn] holds gate | up per row; out [T x ffn] = silu(gate) * up, silu(g) =
// g sigmoid(g).
void swiglu_forward(std::span<const float> in, std::span<float> out, std::int64_t tokens, std::int64_t ffn);
// d_in [T x 2*ffn] (written): d_gate | d_up.
void swiglu_backward(std::span<const float> in, std::span<const float> d_out, std::span<float> d_in,
                     std::int64_t tokens, std::int64_t ffn);

// ---- Loss ---------------------------------------------------------------------------------------------------
// Mean over T tokens of -log softmax(logits[t])[targets[t]] (the maximum subtracted first, summed in double in
// token order). logits [T x vocabulary], targets [T] in [0, vocabulary) (else InputError). d_logits [T x
// vocabulary] gets (softmax - one_hot) / T, the gradient of the mean; empty: the loss only.
double cross_entropy_forward(std::span<const float> logits, std::span<const std::int32_t> targets,
                             std::span<float> d_logits, std::int64_t tokens, std::int64_t vocabulary);

// ---- Optimiser ----------------------------------------------------------------------------------------------
struct AdamWOptions {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // decoupled (Loshchilov and Hutter 2019): p -= lr * weight_decay * p
};
// One AdamW step (PyTorch's torch.optim.AdamW): m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p = p (1 - lr wd) - lr (m / (1-b1^step)) / (sqrt(v / (1-b2^step)) + eps). params, grads, m, v the same size;
// m and v start at zero; step counts from 1 (else InputError).
void adamw_step(std::span<float> params, std::span<const float> grads, std::span<float> m, std::span<float> v,
                std::int64_t step, const AdamWOptions& options);

}  // namespace dsgd::nn
