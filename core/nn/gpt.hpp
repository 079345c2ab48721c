#pragma once
// A small GPT on the CPU kernels of core/nn/transformer_ops.hpp, cut Megatron-LM's way into tensor-parallel shards
// and pipeline stages: the model half of 3-D parallel training (docs/nn.md "A GPT split for 3-D parallelism").
// Communication stays outside: where Megatron-LM reduces over the tensor-parallel group this code calls a
// callback, and pipeline stages hand each other hidden states through their caller.
//
// The model is GPT-2's pre-norm decoder: x = words[id] + positions[p]; per block x += attention(LayerNorm(x)),
// x += MLP(LayerNorm(x)) with a tanh-GELU MLP; logits = LayerNorm(x) words^T (tied) or head.words^T (untied); the
// loss is the mean cross-entropy over the micro-batch's tokens. fp32, no dropout (TransformerSpec::dropout is
// ignored), deterministic: the same inputs give the same bits on every run.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/nn/transformer_ops.hpp"
#include "core/transformer.hpp"

namespace dsgd::nn {

// One tensor-parallel rank's shard of one pipeline stage. Heads and the MLP's width are divided by tensor_parallel
// (query, key, value and the MLP's first product split by columns, the attention's output and the MLP's second
// product by rows); the vocabulary of the embedding and of the logits by rows, padded to a multiple of
// tensor_parallel (the padding rows are zero and masked out of the softmax, so the loss does not depend on it).
// The stage holds blocks first_layer .. first_layer + layers - 1; `embedding` needs first_layer == 0, `head` the
// model's last block.
struct GptShard {
  int tensor_parallel = 1;
  int tensor_rank = 0;
  std::int64_t first_layer = 0;
  std::int64_t layers = 0;
  bool embedding = false;  // the word and position embeddings: this stage takes token ids
  bool head = false;       // the final norm, the logits and the loss: this stage takes the targets
};

// Reduces `values` over the tensor-parallel group in place. Every rank must end with the same bits (reduce in a
// fixed rank order): replicated parameters then get identical gradients on every rank.
using TensorReduce = std::function<void(std::span<float> values)>;

// The tensor-parallel group's reductions. Called only when tensor_parallel > 1 (both are then required), by every
// rank of the group in the same order with the same sizes. Per block and micro-batch: `sum` twice in the forward
// (the attention's and the MLP's row-parallel outputs, [tokens x hidden]) and twice in the backward (the gradients
// of the column-parallel inputs, [tokens x hidden]); the embedding's lookup once ([tokens x hidden]); the head's
// softmax `max` once ([tokens]) and `sum` once ([2 x tokens]) in the forward, `sum` once ([tokens x hidden]) in
// the backward.
struct TensorGroup {
  TensorReduce sum;  // allreduce-sum
  TensorReduce max;  // allreduce-max: the vocabulary-parallel softmax's maximum
};

// How a full (unsharded) tensor is cut over the tensor-parallel group.
enum class GptSplit { kReplicated, kRows, kColumns };

// One parameter tensor of a stage, row-major [shard_rows x shard_columns] at `offset` in parameters() and
// gradients(). Its name is the same on every shard and stage ("embedding.words", "embedding.positions",
// "layer<l>.norm1.gamma", ".norm1.beta", ".attention.{query,key,value,output}.{weight,bias}", ".norm2.gamma",
// ".norm2.beta", ".mlp.{fc1,fc2}.{weight,bias}", "head.norm.gamma", "head.norm.beta", "head.words" (untied)), and
// its values are rows first .. first + shard_rows - 1 (kRows) or columns first .. first + shard_columns - 1
// (kColumns) of the full tensor [rows x columns]; rows at or past `rows` are vocabulary padding. A vector is 1 x n.
struct GptTensor {
  std::string name;
  std::int64_t rows = 1;
  std::int64_t columns = 0;
  GptSplit split = GptSplit::kReplicated;
  std::int64_t first = 0;
  std::int64_t shard_rows = 1;
  std::int64_t shard_columns = 0;
  std::int64_t offset = 0;
  bool decay = false;  // AdamW's weight decay applies: weights and embeddings, not biases and norms (Megatron-LM)
  std::int64_t size() const { return shard_rows * shard_columns; }
};

class GptStage {
 public:
  // Throws InputError for a model this code does not run (only causal GELU/LayerNorm/learned-position models with
  // biases and kv_heads == heads), heads or ffn_hidden not divisible by tensor_parallel, a shard outside the model
  // or holding nothing, or tensor_parallel > 1 without both reductions. Parameters are initialised from `seed` so
  // that a shard's values are exactly its slice of the unsharded model's, whatever the split: element (r, c) of a
  // full tensor is drawn from (seed, name, r x columns + c) by a counter-based generator (core/nn/random.hpp),
  // uniform with GPT-2's standard deviation 0.02 (the output products' 0.02 / sqrt(2 layers), Megatron-LM's
  // scaled init); biases and betas 0, gammas 1, vocabulary padding 0.
  GptStage(const TransformerSpec& model, const GptShard& shard, std::uint64_t seed, TensorGroup group = {});
  ~GptStage();
  GptStage(GptStage&&) noexcept;
  GptStage& operator=(GptStage&&) noexcept;

  const GptShard& shard() const { return shard_; }
  // The vocabulary padded to a multiple of tensor_parallel; this shard's rows of it start at
  // tensor_rank x padded_vocabulary() / tensor_parallel.
  std::int64_t padded_vocabulary() const { return padded_vocabulary_; }
  // The stage's tensors in the order of the flat buffers: embedding, blocks, head.
  std::span<const GptTensor> tensors() const { return tensors_; }
  // One flat buffer each, laid out by tensors().
  std::span<float> parameters() { return parameters_; }
  std::span<float> gradients() { return gradients_; }
  // With tied embeddings on a stage that holds the embedding or the head but not both: the gradient of this
  // stage's copy of the word embedding [padded_vocabulary / tensor_parallel x hidden], a part of gradients(). The
  // caller sums it between the first and the last stage (Megatron-LM's embedding group) before the optimizer
  // step, so both copies stay equal. Empty otherwise.
  std::span<float> tied_embedding_gradients();

  // Forward of micro-batch `micro_batch` (any int not in flight) on the embedding stage, from token ids [T], T =
  // sequences x model.sequence tokens, sequences one after the other, ids in [0, vocabulary). `targets` [T]: the
  // next tokens, on the head stage only. Returns the outgoing hidden state [T x hidden], or on the head stage one
  // float: the micro-batch's mean cross-entropy loss. The span lives in the micro-batch's saved tensors, valid
  // until its backward. Several micro-batches may be in flight.
  std::span<const float> forward(int micro_batch, std::span<const std::int32_t> ids,
                                 std::span<const std::int32_t> targets = {});
  // The same on a stage without the embedding, from the incoming hidden state [T x hidden].
  std::span<const float> forward(int micro_batch, std::span<const float> hidden,
                                 std::span<const std::int32_t> targets = {});
  // Backward of micro-batch `micro_batch`: d_output is d(outgoing hidden) [T x hidden], empty on the head stage,
  // which starts from loss_scale x d loss (e.g. 1 / micro-batches). Adds (+=) the parameter gradients, frees the
  // micro-batch's saved tensors and returns d(incoming hidden) [T x hidden] (empty on the embedding stage), valid
  // until the next backward.
  std::span<const float> backward(int micro_batch, std::span<const float> d_output, float loss_scale = 1.0f);
  // Micro-batches forwarded and not yet backwarded.
  std::size_t in_flight() const { return saved_.size(); }

  void zero_gradients();
  // One AdamW step (adamw_step) over every tensor, with options.weight_decay on those marked `decay` only. `step`
  // counts from 1; the moments live in the stage. Sum the tied embedding's gradients first (above).
  void adamw_step(std::int64_t step, const AdamWOptions& options);

 private:
  struct Layer;  // the indices of one block's tensors in tensors_
  struct Saved;  // what one micro-batch keeps for its backward

  std::span<const float> run_forward(int micro_batch, std::span<const std::int32_t> ids, std::span<const float> hidden,
                                     std::span<const std::int32_t> targets);
  std::span<float> values(std::size_t tensor);
  std::span<float> grads(std::size_t tensor);
  std::size_t add_tensor(std::string name, std::int64_t rows, std::int64_t columns, GptSplit split, bool decay,
                         bool vocabulary = false);
  void initialise(std::uint64_t seed);
  void reduce_sum(std::span<float> values) const;
  void reduce_max(std::span<float> values) const;
  void layer_forward(const Layer& layer, Saved& saved, std::size_t index, std::int64_t tokens);
  void layer_backward(const Layer& layer, Saved& saved, std::size_t index, std::span<const float> d_y,
                      std::span<float> d_x, std::int64_t tokens);
  float head_forward(Saved& saved, std::int64_t tokens);
  void head_backward(Saved& saved, std::span<float> d_x, float loss_scale, std::int64_t tokens);

  TransformerSpec model_;
  GptShard shard_;
  TensorGroup group_;
  std::int64_t padded_vocabulary_ = 0;
  std::int64_t vocabulary_first_ = 0;  // this shard's first vocabulary row
  std::int64_t vocabulary_rows_ = 0;   // padded_vocabulary_ / tensor_parallel
  std::vector<GptTensor> tensors_;
  std::vector<Layer> layers_;
  std::size_t embedding_words_ = 0;  // indices in tensors_; the two word tables are one tensor when tied
  std::size_t head_words_ = 0;
  std::size_t positions_ = 0;
  std::size_t head_gamma_ = 0;
  std::size_t head_beta_ = 0;
  std::vector<float> parameters_;
  std::vector<float> gradients_;
  std::vector<float> adam_m_;
  std::vector<float> adam_v_;
  std::map<int, std::unique_ptr<Saved>> saved_;
  std::vector<float> d_input_;  // backward's result
};

}  // namespace dsgd::nn
