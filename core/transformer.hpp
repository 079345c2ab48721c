#pragma once
// Transformer models: decoders (GPT-2/GPT-3 and Megatron-LM's GPT family, Llama-style with RMSNorm, SwiGLU, rotary
// positions and grouped-query attention) and encoders (BERT), described by their sizes, and every count derived
// from them: parameters, the kernels of a block for a micro-batch on a tensor-parallel rank, FLOPs per iteration
// and activation bytes (docs/models.md "Transformers").
//
// Conventions: a multiply-add is 2 FLOPs; model FLOPs are the matrix products' (as Megatron-LM counts them: the
// norms, softmax and activations are left out); tensors are 16-bit (mixed precision) unless a kernel says otherwise.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/layer_kernels.hpp"

namespace dsgd {

enum class TransformerNorm { kLayerNorm, kRmsNorm };
enum class TransformerMlp { kGelu, kSwiGlu };
enum class TransformerPosition { kLearned, kRotary };

std::string_view to_string(TransformerNorm norm);
std::string_view to_string(TransformerMlp mlp);
std::string_view to_string(TransformerPosition position);

struct TransformerSpec {
  std::string name;         // the zoo key, e.g. "gpt-1.7b"
  std::string description;  // one line
  bool causal = true;       // a decoder's masked attention; false: an encoder (BERT)
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // grouped-query attention's key/value heads; = heads without it
  std::int64_t ffn_hidden = 0;
  std::int64_t vocabulary = 0;
  std::int64_t sequence = 0;  // tokens per sequence
  TransformerNorm norm = TransformerNorm::kLayerNorm;
  TransformerMlp mlp = TransformerMlp::kGelu;
  TransformerPosition position = TransformerPosition::kLearned;
  bool biases = true;           // GPT and BERT have them; Llama does not
  bool tied_embeddings = true;  // the output layer reuses the input embedding
  double dropout = 0.1;         // hidden and attention dropout; 0: no dropout kernels
  std::int64_t published_parameters = 0;
  std::string published_source;

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t layer_parameters() const;      // one block
  std::int64_t embedding_parameters() const;  // words (+ positions, learned), + the output layer if untied
  std::int64_t parameters() const;            // everything, counted once
};

// The zoo's transformer names, in size order within each family.
std::vector<std::string> transformer_names();
bool is_transformer(std::string_view name);
// Throws InputError naming the known models for an unknown name.
TransformerSpec build_transformer(std::string_view name);

// The kernels one tensor-parallel rank runs for one block on a micro-batch of `micro_batch` sequences, split
// Megatron-LM's way over `tensor_parallel` ranks (the QKV and first MLP products by columns, the output products
// by rows; heads and the MLP's width divided). Forward first, then the backward passes of each kernel, last
// kernel first. `sequence_parallel` splits the norms and dropouts along the sequence (Korthikanti et al. 2022).
// Throws InputError where heads, kv_heads, ffn_hidden or the vocabulary do not divide by tensor_parallel.
std::vector<LayerKernel> transformer_block_kernels(const TransformerSpec& model, std::int64_t micro_batch,
                                                   int tensor_parallel, bool sequence_parallel = false);
// The output layer's kernels (final norm, logits, fp32 cross-entropy) and the embedding's, on one rank.
std::vector<LayerKernel> transformer_head_kernels(const TransformerSpec& model, std::int64_t micro_batch,
                                                  int tensor_parallel);
std::vector<LayerKernel> transformer_embedding_kernels(const TransformerSpec& model, std::int64_t micro_batch,
                                                       int tensor_parallel);

// Model FLOPs of one iteration on `batch` sequences: forward, backward (twice the forward's products) and, with
// full recomputation, every block's forward once more. Summed from the kernels above.
double transformer_iteration_flops(const TransformerSpec& model, std::int64_t batch, bool full_recomputation);
// Megatron-LM SC'21's closed forms (Narayanan et al. 2021, sec. 5.1, for ffn = 4h, a tied output layer): with full
// recomputation 96 B s l h^2 (1 + s/(6h) + V/(16 l h)); without it 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
double megatron_iteration_flops(const TransformerSpec& model, std::int64_t batch, bool full_recomputation);

enum class Recomputation { kNone, kSelective, kFull };
std::string_view to_string(Recomputation recomputation);
// "none", "selective" or "full"; UnknownNameError lists them.
Recomputation recomputation_from_string(std::string_view name);

// Bytes of activations one block keeps for its backward pass, per micro-batch of `micro_batch` sequences on one of
// `tensor_parallel` ranks (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// Table 2, for 16-bit tensors and 1-byte dropout masks): none s b h (10 + 24/t + 5 a s/(h t)) (34/t + 5 a s/(h t)
// with sequence parallelism), selective (the attention's softmax and dropout recomputed) s b h (10 + 24/t) (34/t),
// full (only the block's input kept) 2 s b h (2 s b h / t). Derived here from the block's tensors, so Llama's
// SwiGLU, grouped-query attention and missing dropout change it.
double block_activation_bytes(const TransformerSpec& model, std::int64_t micro_batch, int tensor_parallel,
                              Recomputation recomputation, bool sequence_parallel = false);

}  // namespace dsgd
