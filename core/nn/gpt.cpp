// A GPT cut into tensor-parallel shards and pipeline stages (core/nn/gpt.hpp, docs/nn.md "A GPT split for 3-D
// parallelism"). Megatron-LM's scheme (Shoeybi et al. 2019, "Megatron-LM", sec. 3): a column-parallel product
// needs nothing in its forward and a sum of its input's gradient in the backward; a row-parallel product sums its
// partial outputs in the forward (its bias added after the sum) and needs nothing in the backward.

#include "core/nn/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/nn/random.hpp"

namespace dsgd::nn {

struct GptStage::Layer {
  std::size_t norm1_gamma, norm1_beta;
  std::size_t query_weight, query_bias, key_weight, key_bias, value_weight, value_bias;
  std::size_t output_weight, output_bias;
  std::size_t norm2_gamma, norm2_beta;
  std::size_t fc1_weight, fc1_bias, fc2_weight, fc2_bias;
};

namespace {

// One block's activations kept for its backward. T tokens; local sizes after the tensor-parallel cut.
struct LayerSaved {
  std::vector<float> norm1, mean1, rstd1;  // [T x hidden], [T], [T]
  std::vector<float> q, k, v, attention;   // [T x local heads * head_dim]
  std::vector<float> probs;                // [sequences x local heads x sequence x sequence]
  std::vector<float> middle;               // the residual stream after the attention, [T x hidden]
  std::vector<float> norm2, mean2, rstd2;
  std::vector<float> fc, gelu;  // [T x ffn / tensor_parallel]
};

std::vector<float> zeros(std::int64_t n) { return std::vector<float>(static_cast<std::size_t>(n), 0.0f); }

// `x[i] += y[i]` over one size.
void add_into(std::span<float> x, std::span<const float> y) {
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

// The row-parallel products' epilogue: out = residual + (partial sum + bias), bias [hidden] per row.
void residual_bias(std::span<const float> residual, std::span<const float> sum, std::span<const float> bias,
                   std::span<float> out, std::int64_t tokens, std::int64_t hidden) {
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t j = 0; j < hidden; ++j) {
      const std::int64_t i = t * hidden + j;
      out[i] = residual[i] + (sum[i] + bias[j]);
    }
  }
}

// [rows x columns] to [columns x rows].
std::vector<float> transpose(std::span<const float> a, std::int64_t rows, std::int64_t columns) {
  std::vector<float> t(a.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < columns; ++c) t[c * rows + r] = a[r * columns + c];
  }
  return t;
}

void require(bool condition, const std::string& message) {
  if (!condition) throw InputError("GptStage: " + message);
}

}  // namespace

struct GptStage::Saved {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> targets;
  // hidden[0] the stage's input (or the embedding's output), hidden[i + 1] block i's output, [T x hidden] each.
  std::vector<std::vector<float>> hidden;
  std::vector<LayerSaved> layers;
  std::vector<float> head_norm, head_mean, head_rstd;  // the final norm, [T x hidden], [T], [T]
  std::vector<float> logits;                           // this shard's [T x padded vocabulary / tensor_parallel]
  std::vector<float> max;                              // the softmax's maximum over the vocabulary, [T]
  std::vector<float> sums;  // [2 x T]: sum over the vocabulary of exp(logit - max) | target logit - max
  float loss = 0.0f;
};

GptStage::GptStage(const TransformerSpec& model, const GptShard& shard, std::uint64_t seed, TensorGroup group)
    : model_(model), shard_(shard), group_(std::move(group)) {
  const std::string name = "model '" + model.name + "': ";
  require(model.causal && model.norm == TransformerNorm::kLayerNorm && model.mlp == TransformerMlp::kGelu &&
              model.position == TransformerPosition::kLearned && model.biases,
          name + "expected a causal decoder with LayerNorm, a GELU MLP, learned positions and biases (GPT-2's)");
  require(model.layers >= 1 && model.hidden >= 1 && model.heads >= 1 && model.ffn_hidden >= 1 &&
              model.vocabulary >= 1 && model.sequence >= 1,
          name + "layers, hidden, heads, ffn_hidden, vocabulary and sequence must be positive");
  require(model.kv_heads == model.heads, name + "kv_heads = " + std::to_string(model.kv_heads) + ", expected heads = " +
                                             std::to_string(model.heads) + " (no grouped-query attention)");
  require(model.hidden % model.heads == 0, name + "hidden = " + std::to_string(model.hidden) +
                                               " does not divide by heads = " + std::to_string(model.heads));
  const int t = shard.tensor_parallel;
  require(t >= 1 && shard.tensor_rank >= 0 && shard.tensor_rank < t,
          "tensor_rank = " + std::to_string(shard.tensor_rank) + ", tensor_parallel = " + std::to_string(t) +
              ": expected 0 <= tensor_rank < tensor_parallel");
  require(model.heads % t == 0 && model.ffn_hidden % t == 0,
          name + "heads = " + std::to_string(model.heads) + " and ffn_hidden = " + std::to_string(model.ffn_hidden) +
              " must divide by tensor_parallel = " + std::to_string(t));
  require(shard.first_layer >= 0 && shard.layers >= 0 && shard.first_layer + shard.layers <= model.layers,
          "layers " + std::to_string(shard.first_layer) + " .. " +
              std::to_string(shard.first_layer + shard.layers - 1) + " are outside the model's 0 .. " +
              std::to_string(model.layers - 1));
  require(!shard.embedding || shard.first_layer == 0,
          "the embedding stage must start at layer 0, not " + std::to_string(shard.first_layer));
  require(!shard.head || shard.first_layer + shard.layers == model.layers,
          "the head stage must end with the model's last layer " + std::to_string(model.layers - 1));
  require(shard.embedding || shard.head || shard.layers > 0, "a stage must hold a layer, the embedding or the head");
  require(t == 1 || (group_.sum && group_.max),
          "tensor_parallel = " + std::to_string(t) + " needs the group's sum and max reductions");

  padded_vocabulary_ = (model.vocabulary + t - 1) / t * t;
  vocabulary_rows_ = padded_vocabulary_ / t;
  vocabulary_first_ = shard.tensor_rank * vocabulary_rows_;
  const std::int64_t h = model.hidden;
  const std::int64_t v = model.vocabulary;
  const std::int64_t f = model.ffn_hidden;

  // The flat layout: embedding, blocks in order, head.
  if (shard.embedding) {
    embedding_words_ = add_tensor("embedding.words", v, h, GptSplit::kRows, true, true);
    positions_ = add_tensor("embedding.positions", model.sequence, h, GptSplit::kReplicated, true);
  }
  for (std::int64_t l = shard.first_layer; l < shard.first_layer + shard.layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    Layer layer{};
    layer.norm1_gamma = add_tensor(p + "norm1.gamma", 1, h, GptSplit::kReplicated, false);
    layer.norm1_beta = add_tensor(p + "norm1.beta", 1, h, GptSplit::kReplicated, false);
    layer.query_weight = add_tensor(p + "attention.query.weight", h, h, GptSplit::kColumns, true);
    layer.query_bias = add_tensor(p + "attention.query.bias", 1, h, GptSplit::kColumns, false);
    layer.key_weight = add_tensor(p + "attention.key.weight", h, h, GptSplit::kColumns, true);
    layer.key_bias = add_tensor(p + "attention.key.bias", 1, h, GptSplit::kColumns, false);
    layer.value_weight = add_tensor(p + "attention.value.weight", h, h, GptSplit::kColumns, true);
    layer.value_bias = add_tensor(p + "attention.value.bias", 1, h, GptSplit::kColumns, false);
    layer.output_weight = add_tensor(p + "attention.output.weight", h, h, GptSplit::kRows, true);
    layer.output_bias = add_tensor(p + "attention.output.bias", 1, h, GptSplit::kReplicated, false);
    layer.norm2_gamma = add_tensor(p + "norm2.gamma", 1, h, GptSplit::kReplicated, false);
    layer.norm2_beta = add_tensor(p + "norm2.beta", 1, h, GptSplit::kReplicated, false);
    layer.fc1_weight = add_tensor(p + "mlp.fc1.weight", h, f, GptSplit::kColumns, true);
    layer.fc1_bias = add_tensor(p + "mlp.fc1.bias", 1, f, GptSplit::kColumns, false);
    layer.fc2_weight = add_tensor(p + "mlp.fc2.weight", f, h, GptSplit::kRows, true);
    layer.fc2_bias = add_tensor(p + "mlp.fc2.bias", 1, h, GptSplit::kReplicated, false);
    layers_.push_back(layer);
  }
  if (shard.head) {
    head_gamma_ = add_tensor("head.norm.gamma", 1, h, GptSplit::kReplicated, false);
    head_beta_ = add_tensor("head.norm.beta", 1, h, GptSplit::kReplicated, false);
    if (!model.tied_embeddings) {
      head_words_ = add_tensor("head.words", v, h, GptSplit::kRows, true, true);
    } else if (shard.embedding) {
      head_words_ = embedding_words_;
    } else {
      // Megatron-LM's copy of the word embedding on the last stage; initialised as the first stage's.
      head_words_ = add_tensor("embedding.words", v, h, GptSplit::kRows, true, true);
    }
  }
  const std::int64_t total = tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().size();
  parameters_ = zeros(total);
  gradients_ = zeros(total);
  initialise(seed);
}

GptStage::~GptStage() = default;
GptStage::GptStage(GptStage&&) noexcept = default;
GptStage& GptStage::operator=(GptStage&&) noexcept = default;

std::size_t GptStage::add_tensor(std::string name, std::int64_t rows, std::int64_t columns, GptSplit split, bool decay,
                                 bool vocabulary) {
  GptTensor tensor;
  tensor.name = std::move(name);
  tensor.rows = rows;
  tensor.columns = columns;
  tensor.split = split;
  tensor.decay = decay;
  tensor.shard_rows = rows;
  tensor.shard_columns = columns;
  const int t = shard_.tensor_parallel;
  if (split == GptSplit::kRows) {
    // The vocabulary tables are padded; every other row split divides evenly.
    tensor.shard_rows = vocabulary ? vocabulary_rows_ : rows / t;
    tensor.first = shard_.tensor_rank * tensor.shard_rows;
  } else if (split == GptSplit::kColumns) {
    tensor.shard_columns = columns / t;
    tensor.first = shard_.tensor_rank * tensor.shard_columns;
  }
  tensor.offset = tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().size();
  tensors_.push_back(std::move(tensor));
  return tensors_.size() - 1;
}

void GptStage::initialise(std::uint64_t seed) {
  const double layer_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(model_.layers));
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const GptTensor& tensor = tensors_[i];
    std::span<float> out = values(i);
    if (tensor.name.ends_with(".gamma")) {
      std::fill(out.begin(), out.end(), 1.0f);
      continue;
    }
    if (!tensor.decay) continue;  // biases and betas: 0
    double std_dev = 0.02;
    if (tensor.name.ends_with("attention.output.weight") || tensor.name.ends_with("mlp.fc2.weight")) {
      std_dev *= layer_scale;
    }
    // Uniform in [-a, a) has standard deviation a / sqrt(3).
    const auto bound = static_cast<float>(std_dev * std::sqrt(3.0));
    const std::uint64_t stream = mix64(seed) ^ name_hash(tensor.name);
    for (std::int64_t r = 0; r < tensor.shard_rows; ++r) {
      for (std::int64_t c = 0; c < tensor.shard_columns; ++c) {
        const std::int64_t row = tensor.split == GptSplit::kRows ? tensor.first + r : r;
        const std::int64_t column = tensor.split == GptSplit::kColumns ? tensor.first + c : c;
        if (row >= tensor.rows) continue;  // vocabulary padding stays 0
        const auto index = static_cast<std::uint64_t>(row * tensor.columns + column);
        out[r * tensor.shard_columns + c] = (2.0f * unit_float(random_bits(stream, index)) - 1.0f) * bound;
      }
    }
  }
}

std::span<float> GptStage::values(std::size_t tensor) {
  const GptTensor& t = tensors_[tensor];
  return std::span<float>(parameters_).subspan(static_cast<std::size_t>(t.offset), static_cast<std::size_t>(t.size()));
}

std::span<float> GptStage::grads(std::size_t tensor) {
  const GptTensor& t = tensors_[tensor];
  return std::span<float>(gradients_).subspan(static_cast<std::size_t>(t.offset), static_cast<std::size_t>(t.size()));
}

std::span<float> GptStage::tied_embedding_gradients() {
  if (!model_.tied_embeddings || shard_.embedding == shard_.head) return {};
  return grads(shard_.embedding ? embedding_words_ : head_words_);
}

void GptStage::reduce_sum(std::span<float> values) const {
  if (shard_.tensor_parallel > 1) group_.sum(values);
}

void GptStage::reduce_max(std::span<float> values) const {
  if (shard_.tensor_parallel > 1) group_.max(values);
}

void GptStage::zero_gradients() { std::fill(gradients_.begin(), gradients_.end(), 0.0f); }

void GptStage::adamw_step(std::int64_t step, const AdamWOptions& options) {
  if (adam_m_.empty()) {
    adam_m_ = zeros(static_cast<std::int64_t>(parameters_.size()));
    adam_v_ = zeros(static_cast<std::int64_t>(parameters_.size()));
  }
  AdamWOptions no_decay = options;
  no_decay.weight_decay = 0.0f;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const GptTensor& t = tensors_[i];
    const auto offset = static_cast<std::size_t>(t.offset);
    const auto size = static_cast<std::size_t>(t.size());
    nn::adamw_step(values(i), grads(i), std::span<float>(adam_m_).subspan(offset, size),
                   std::span<float>(adam_v_).subspan(offset, size), step, t.decay ? options : no_decay);
  }
}

// ---- Forward ------------------------------------------------------------------------------------------------

std::span<const float> GptStage::forward(int micro_batch, std::span<const std::int32_t> ids,
                                         std::span<const std::int32_t> targets) {
  return run_forward(micro_batch, ids, {}, targets);
}

std::span<const float> GptStage::forward(int micro_batch, std::span<const float> hidden,
                                         std::span<const std::int32_t> targets) {
  return run_forward(micro_batch, {}, hidden, targets);
}

std::span<const float> GptStage::run_forward(int micro_batch, std::span<const std::int32_t> ids,
                                             std::span<const float> hidden, std::span<const std::int32_t> targets) {
  const std::string where = "forward of micro-batch " + std::to_string(micro_batch) + ": ";
  require(!saved_.contains(micro_batch), where + "it is already in flight (its backward has not run)");
  const std::int64_t h = model_.hidden;
  const std::int64_t s = model_.sequence;
  require(shard_.embedding ? !ids.empty() && hidden.empty() : ids.empty() && !hidden.empty(),
          where + (shard_.embedding ? "the embedding stage takes ids and no hidden state"
                                    : "a stage without the embedding takes a hidden state and no ids"));
  const auto tokens =
      static_cast<std::int64_t>(shard_.embedding ? ids.size() : hidden.size() / static_cast<std::size_t>(h));
  require(tokens % s == 0 && (shard_.embedding || hidden.size() == static_cast<std::size_t>(tokens * h)),
          where + "expected sequences x " + std::to_string(s) + " tokens" +
              (shard_.embedding ? "" : " x hidden = " + std::to_string(h) + " values") + ", got " +
              std::to_string(shard_.embedding ? ids.size() : hidden.size()));
  require(shard_.head == !targets.empty(),
          where + (shard_.head ? "the head stage takes the targets" : "only the head stage takes targets"));
  require(
      !shard_.head || targets.size() == static_cast<std::size_t>(tokens),
      where + "targets hold " + std::to_string(targets.size()) + " ids, expected tokens = " + std::to_string(tokens));
  const auto check_ids = [&](std::span<const std::int32_t> checked, const char* what) {
    for (std::size_t i = 0; i < checked.size(); ++i) {
      require(checked[i] >= 0 && checked[i] < model_.vocabulary,
              where + what + "[" + std::to_string(i) + "] = " + std::to_string(checked[i]) + " is outside [0, " +
                  std::to_string(model_.vocabulary) + ")");
    }
  };
  check_ids(ids, "ids");
  check_ids(targets, "targets");

  auto saved = std::make_unique<Saved>();
  saved->ids.assign(ids.begin(), ids.end());
  saved->targets.assign(targets.begin(), targets.end());
  saved->hidden.resize(layers_.size() + 1);
  saved->layers.resize(layers_.size());
  std::vector<float>& x = saved->hidden[0];
  if (shard_.embedding) {
    // Vocabulary-parallel lookup: a shard writes the rows it owns, zeros elsewhere; the sum over the group is
    // exact (one term is nonzero). Then the positions.
    x = zeros(tokens * h);
    const std::span<const float> words = values(embedding_words_);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t row = ids[t] - vocabulary_first_;
      if (row >= 0 && row < vocabulary_rows_) std::copy_n(words.data() + row * h, h, x.data() + t * h);
    }
    reduce_sum(x);
    const std::span<const float> positions = values(positions_);
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t j = 0; j < h; ++j) x[t * h + j] += positions[(t % s) * h + j];
    }
  } else {
    x.assign(hidden.begin(), hidden.end());
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) layer_forward(layers_[i], *saved, i, tokens);
  if (shard_.head) saved->loss = head_forward(*saved, tokens);
  const Saved& kept = *saved;
  saved_.emplace(micro_batch, std::move(saved));
  if (shard_.head) return std::span<const float>(&kept.loss, 1);
  return kept.hidden.back();
}

void GptStage::layer_forward(const Layer& layer, Saved& saved, std::size_t index, std::int64_t tokens) {
  const std::int64_t h = model_.hidden;
  const std::int64_t local = h / shard_.tensor_parallel;  // local heads x head_dim
  const std::int64_t ffn = model_.ffn_hidden / shard_.tensor_parallel;
  const std::span<const float> x = saved.hidden[index];
  LayerSaved& s = saved.layers[index];
  const AttentionShape shape{.batch = tokens / model_.sequence,
                             .sequence = model_.sequence,
                             .heads = model_.heads / shard_.tensor_parallel,
                             .kv_heads = model_.heads / shard_.tensor_parallel,
                             .head_dim = model_.head_dim()};

  // Attention: norm, the column-parallel query/key/value products, this shard's heads, the row-parallel output
  // product summed over the group, its bias, the residual.
  s.norm1 = zeros(tokens * h);
  s.mean1 = zeros(tokens);
  s.rstd1 = zeros(tokens);
  layer_norm_forward(x, values(layer.norm1_gamma), values(layer.norm1_beta), s.norm1, s.mean1, s.rstd1, tokens, h);
  s.q = zeros(tokens * local);
  s.k = zeros(tokens * local);
  s.v = zeros(tokens * local);
  linear_forward(s.norm1, values(layer.query_weight), values(layer.query_bias), s.q, tokens, h, local);
  linear_forward(s.norm1, values(layer.key_weight), values(layer.key_bias), s.k, tokens, h, local);
  linear_forward(s.norm1, values(layer.value_weight), values(layer.value_bias), s.v, tokens, h, local);
  s.attention = zeros(tokens * local);
  s.probs = zeros(shape.batch * shape.heads * shape.sequence * shape.sequence);
  causal_attention_forward(s.q, s.k, s.v, s.attention, s.probs, shape);
  std::vector<float> partial = zeros(tokens * h);
  linear_forward(s.attention, values(layer.output_weight), {}, partial, tokens, local, h);
  reduce_sum(partial);
  s.middle = zeros(tokens * h);
  residual_bias(x, partial, values(layer.output_bias), s.middle, tokens, h);

  // MLP: norm, the column-parallel first product, GELU, the row-parallel second product summed, bias, residual.
  s.norm2 = zeros(tokens * h);
  s.mean2 = zeros(tokens);
  s.rstd2 = zeros(tokens);
  layer_norm_forward(s.middle, values(layer.norm2_gamma), values(layer.norm2_beta), s.norm2, s.mean2, s.rstd2, tokens,
                     h);
  s.fc = zeros(tokens * ffn);
  linear_forward(s.norm2, values(layer.fc1_weight), values(layer.fc1_bias), s.fc, tokens, h, ffn);
  s.gelu = zeros(tokens * ffn);
  gelu_forward(s.fc, s.gelu);
  std::fill(partial.begin(), partial.end(), 0.0f);
  linear_forward(s.gelu, values(layer.fc2_weight), {}, partial, tokens, ffn, h);
  reduce_sum(partial);
  saved.hidden[index + 1] = zeros(tokens * h);
  residual_bias(s.middle, partial, values(layer.fc2_bias), saved.hidden[index + 1], tokens, h);
}

float GptStage::head_forward(Saved& saved, std::int64_t tokens) {
  const std::int64_t h = model_.hidden;
  const std::int64_t rows = vocabulary_rows_;
  // This shard's vocabulary rows that are not padding.
  const std::int64_t valid = std::clamp<std::int64_t>(model_.vocabulary - vocabulary_first_, 0, rows);
  saved.head_norm = zeros(tokens * h);
  saved.head_mean = zeros(tokens);
  saved.head_rstd = zeros(tokens);
  layer_norm_forward(saved.hidden.back(), values(head_gamma_), values(head_beta_), saved.head_norm, saved.head_mean,
                     saved.head_rstd, tokens, h);
  // This shard's logits: norm x words^T over its vocabulary rows.
  const std::vector<float> words_t = transpose(values(head_words_), rows, h);
  saved.logits = zeros(tokens * rows);
  linear_forward(saved.head_norm, words_t, {}, saved.logits, tokens, h, rows);

  // Megatron-LM's vocabulary-parallel cross-entropy: the maximum over the group, then the sums of exp(logit - max)
  // and the target's logit (from the shard that owns it, 0 elsewhere) in one sum over the group.
  saved.max.assign(static_cast<std::size_t>(tokens), -std::numeric_limits<float>::infinity());
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* l = saved.logits.data() + t * rows;
    if (valid > 0) saved.max[t] = *std::max_element(l, l + valid);
  }
  reduce_max(saved.max);
  saved.sums = zeros(2 * tokens);
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* l = saved.logits.data() + t * rows;
    double sum = 0.0;
    for (std::int64_t c = 0; c < valid; ++c) sum += std::exp(static_cast<double>(l[c]) - saved.max[t]);
    saved.sums[t] = static_cast<float>(sum);
    const std::int64_t target = saved.targets[t] - vocabulary_first_;
    if (target >= 0 && target < valid) saved.sums[tokens + t] = l[target] - saved.max[t];
  }
  reduce_sum(saved.sums);
  double loss = 0.0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    loss += std::log(static_cast<double>(saved.sums[t])) - saved.sums[tokens + t];
  }
  return static_cast<float>(loss / static_cast<double>(tokens));
}

// ---- Backward -----------------------------------------------------------------------------------------------

std::span<const float> GptStage::backward(int micro_batch, std::span<const float> d_output, float loss_scale) {
  const std::string where = "backward of micro-batch " + std::to_string(micro_batch) + ": ";
  const auto found = saved_.find(micro_batch);
  require(found != saved_.end(), where + "it is not in flight (no forward, or its backward already ran)");
  Saved& saved = *found->second;
  const std::int64_t h = model_.hidden;
  const auto tokens = static_cast<std::int64_t>(saved.hidden[0].size()) / h;
  require(shard_.head ? d_output.empty() : d_output.size() == static_cast<std::size_t>(tokens * h),
          where + (shard_.head ? "the head stage takes no output gradient (it starts from the loss)"
                               : "d_output holds " + std::to_string(d_output.size()) +
                                     " values, expected tokens x hidden = " + std::to_string(tokens * h)));
  std::vector<float> d_y(d_output.begin(), d_output.end());
  if (shard_.head) {
    d_y = zeros(tokens * h);
    head_backward(saved, d_y, loss_scale, tokens);
  }
  std::vector<float> d_x = zeros(tokens * h);
  for (std::size_t i = layers_.size(); i-- > 0;) {
    layer_backward(layers_[i], saved, i, d_y, d_x, tokens);
    std::swap(d_x, d_y);
  }
  // d_y is now the gradient of the stage's input (or of the embedding's output).
  if (shard_.embedding) {
    const std::int64_t s = model_.sequence;
    const std::span<float> d_words = grads(embedding_words_);
    const std::span<float> d_positions = grads(positions_);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const float* g = d_y.data() + t * h;
      float* p = d_positions.data() + (t % s) * h;
      for (std::int64_t j = 0; j < h; ++j) p[j] += g[j];
      const std::int64_t row = saved.ids[t] - vocabulary_first_;
      if (row >= 0 && row < vocabulary_rows_) {
        float* w = d_words.data() + row * h;
        for (std::int64_t j = 0; j < h; ++j) w[j] += g[j];
      }
    }
    d_input_.clear();
  } else {
    d_input_ = std::move(d_y);
  }
  saved_.erase(found);
  return d_input_;
}

void GptStage::head_backward(Saved& saved, std::span<float> d_x, float loss_scale, std::int64_t tokens) {
  const std::int64_t h = model_.hidden;
  const std::int64_t rows = vocabulary_rows_;
  const std::int64_t valid = std::clamp<std::int64_t>(model_.vocabulary - vocabulary_first_, 0, rows);
  // d logits = loss_scale (softmax - one_hot) / T over this shard's rows; padding rows get 0.
  const double scale = static_cast<double>(loss_scale) / static_cast<double>(tokens);
  std::vector<float> d_logits = zeros(tokens * rows);
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* l = saved.logits.data() + t * rows;
    float* d = d_logits.data() + t * rows;
    const double factor = scale / saved.sums[t];
    for (std::int64_t c = 0; c < valid; ++c) {
      d[c] = static_cast<float>(std::exp(static_cast<double>(l[c]) - saved.max[t]) * factor);
    }
    const std::int64_t target = saved.targets[t] - vocabulary_first_;
    if (target >= 0 && target < valid) d[target] -= static_cast<float>(scale);
  }
  // The logits' product through the transposed table: its gradient lands transposed in d_words_t.
  const std::vector<float> words_t = transpose(values(head_words_), rows, h);
  std::vector<float> d_words_t = zeros(h * rows);
  std::vector<float> d_norm = zeros(tokens * h);
  linear_backward(saved.head_norm, words_t, d_logits, d_norm, d_words_t, {}, tokens, h, rows);
  const std::span<float> d_words = grads(head_words_);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < h; ++j) d_words[r * h + j] += d_words_t[j * rows + r];
  }
  // The logits are column-parallel over the vocabulary: the norm's gradient sums over the group.
  reduce_sum(d_norm);
  layer_norm_backward(saved.hidden.back(), values(head_gamma_), saved.head_mean, saved.head_rstd, d_norm, d_x,
                      grads(head_gamma_), grads(head_beta_), tokens, h);
}

void GptStage::layer_backward(const Layer& layer, Saved& saved, std::size_t index, std::span<const float> d_y,
                              std::span<float> d_x, std::int64_t tokens) {
  const std::int64_t h = model_.hidden;
  const std::int64_t local = h / shard_.tensor_parallel;
  const std::int64_t ffn = model_.ffn_hidden / shard_.tensor_parallel;
  LayerSaved& s = saved.layers[index];
  const AttentionShape shape{.batch = tokens / model_.sequence,
                             .sequence = model_.sequence,
                             .heads = model_.heads / shard_.tensor_parallel,
                             .kv_heads = model_.heads / shard_.tensor_parallel,
                             .head_dim = model_.head_dim()};

  // MLP, last product first; the bias of the row-parallel product takes the full d_y (the same on every shard).
  std::vector<float> d_gelu = zeros(tokens * ffn);
  linear_backward(s.gelu, values(layer.fc2_weight), d_y, d_gelu, grads(layer.fc2_weight), grads(layer.fc2_bias), tokens,
                  ffn, h);
  std::vector<float> d_fc = zeros(tokens * ffn);
  gelu_backward(s.fc, d_gelu, d_fc);
  std::vector<float> d_norm = zeros(tokens * h);
  linear_backward(s.norm2, values(layer.fc1_weight), d_fc, d_norm, grads(layer.fc1_weight), grads(layer.fc1_bias),
                  tokens, h, ffn);
  reduce_sum(d_norm);  // the column-parallel product's input gradient
  std::vector<float> d_middle = zeros(tokens * h);
  layer_norm_backward(s.middle, values(layer.norm2_gamma), s.mean2, s.rstd2, d_norm, d_middle, grads(layer.norm2_gamma),
                      grads(layer.norm2_beta), tokens, h);
  add_into(d_middle, d_y);  // the residual

  // Attention.
  std::vector<float> d_attention = zeros(tokens * local);
  linear_backward(s.attention, values(layer.output_weight), d_middle, d_attention, grads(layer.output_weight),
                  grads(layer.output_bias), tokens, local, h);
  std::vector<float> d_q = zeros(tokens * local);
  std::vector<float> d_k = zeros(tokens * local);
  std::vector<float> d_v = zeros(tokens * local);
  causal_attention_backward(s.q, s.k, s.v, s.probs, d_attention, d_q, d_k, d_v, shape);
  std::vector<float> d_part = zeros(tokens * h);
  linear_backward(s.norm1, values(layer.query_weight), d_q, d_norm, grads(layer.query_weight), grads(layer.query_bias),
                  tokens, h, local);
  linear_backward(s.norm1, values(layer.key_weight), d_k, d_part, grads(layer.key_weight), grads(layer.key_bias),
                  tokens, h, local);
  add_into(d_norm, d_part);
  linear_backward(s.norm1, values(layer.value_weight), d_v, d_part, grads(layer.value_weight), grads(layer.value_bias),
                  tokens, h, local);
  add_into(d_norm, d_part);
  reduce_sum(d_norm);
  layer_norm_backward(saved.hidden[index], values(layer.norm1_gamma), s.mean1, s.rstd1, d_norm, d_x,
                      grads(layer.norm1_gamma), grads(layer.norm1_beta), tokens, h);
  add_into(d_x, d_middle);
}

}  // namespace dsgd::nn
