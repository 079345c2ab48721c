#include "core/transformer.hpp"

#include <algorithm>
#include <array>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd {

namespace {

// In declaration order (core/enum_names.hpp).
constexpr EnumNames<2> kNormNames = {"layernorm", "rmsnorm"};
constexpr EnumNames<2> kMlpNames = {"gelu", "swiglu"};
constexpr EnumNames<2> kPositionNames = {"learned", "rotary"};
constexpr EnumNames<3> kRecomputationNames = {"none", "selective", "full"};

}  // namespace

std::string_view to_string(TransformerNorm norm) { return name_of(norm, kNormNames); }
std::string_view to_string(TransformerMlp mlp) { return name_of(mlp, kMlpNames); }
std::string_view to_string(TransformerPosition position) { return name_of(position, kPositionNames); }
std::string_view to_string(Recomputation recomputation) { return name_of(recomputation, kRecomputationNames); }
Recomputation recomputation_from_string(std::string_view name) {
  return from_name<Recomputation>("recomputation", name, kRecomputationNames);
}

std::int64_t TransformerSpec::layer_parameters() const {
  const std::int64_t kv_width = kv_heads * head_dim();
  const std::int64_t attention = hidden * (hidden + 2 * kv_width) + hidden * hidden;
  const std::int64_t mlp_in = mlp == TransformerMlp::kSwiGlu ? 2 * ffn_hidden : ffn_hidden;
  const std::int64_t mlp_weights = hidden * mlp_in + ffn_hidden * hidden;
  const std::int64_t norm_weights = norm == TransformerNorm::kLayerNorm ? 2 * hidden : hidden;  // scale (+ shift)
  std::int64_t bias = 0;
  if (biases) bias = (hidden + 2 * kv_width) + hidden + mlp_in + hidden;
  return attention + mlp_weights + 2 * norm_weights + bias;
}

std::int64_t TransformerSpec::embedding_parameters() const {
  std::int64_t count = vocabulary * hidden;
  if (position == TransformerPosition::kLearned) count += sequence * hidden;
  if (!tied_embeddings) count += vocabulary * hidden;
  return count;
}

std::int64_t TransformerSpec::parameters() const {
  const std::int64_t final_norm = norm == TransformerNorm::kLayerNorm ? 2 * hidden : hidden;
  return layers * layer_parameters() + embedding_parameters() + final_norm;
}

namespace {

// Megatron-LM SC'21 Table 1 (Narayanan et al. 2021): sizes from the paper, heads from its artifact
// (the run_table_1.sh of NVIDIA/Megatron-LM's SC'21 artifact); sequence 2048, vocabulary 51,200, ffn 4h.
TransformerSpec megatron_gpt(std::string name, std::string size, std::int64_t hidden, std::int64_t layers,
                             std::int64_t heads, double published) {
  TransformerSpec spec;
  spec.name = std::move(name);
  spec.description = "GPT " + size + " of Megatron-LM SC'21 Table 1 (h " + std::to_string(hidden) + ", " +
                     std::to_string(layers) + " layers, " + std::to_string(heads) + " heads)";
  spec.layers = layers;
  spec.hidden = hidden;
  spec.heads = heads;
  spec.kv_heads = heads;
  spec.ffn_hidden = 4 * hidden;
  spec.vocabulary = 51200;
  spec.sequence = 2048;
  spec.published_parameters = static_cast<std::int64_t>(published);
  spec.published_source = "Narayanan et al. 2021 (Megatron-LM SC'21) Table 1: " + size +
                          " parameters; heads from the run_table_1.sh of NVIDIA/Megatron-LM's SC'21 artifact";
  return spec;
}

TransformerSpec gpt2(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads, double published,
                     std::string size) {
  TransformerSpec spec;
  spec.name = std::move(name);
  spec.description = "GPT-2 " + size + " (Radford et al. 2019), 1024 tokens, byte-pair vocabulary of 50,257";
  spec.layers = layers;
  spec.hidden = hidden;
  spec.heads = heads;
  spec.kv_heads = heads;
  spec.ffn_hidden = 4 * hidden;
  spec.vocabulary = 50257;
  spec.sequence = 1024;
  spec.published_parameters = static_cast<std::int64_t>(published);
  spec.published_source = "Radford et al. 2019, 'Language Models are Unsupervised Multitask Learners', Table 2 (" +
                          size + "; the 124M of the released small model)";
  return spec;
}

TransformerSpec llama2(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                       std::int64_t kv_heads, std::int64_t ffn, double published, std::string size) {
  TransformerSpec spec;
  spec.name = std::move(name);
  spec.description = "Llama 2 " + size + " (Touvron et al. 2023): RMSNorm, SwiGLU, rotary, " +
                     (kv_heads < heads ? std::to_string(kv_heads) + " key/value heads" : std::string("MHA")) +
                     ", 4096 tokens";
  spec.layers = layers;
  spec.hidden = hidden;
  spec.heads = heads;
  spec.kv_heads = kv_heads;
  spec.ffn_hidden = ffn;
  spec.vocabulary = 32000;
  spec.sequence = 4096;
  spec.norm = TransformerNorm::kRmsNorm;
  spec.mlp = TransformerMlp::kSwiGlu;
  spec.position = TransformerPosition::kRotary;
  spec.biases = false;
  spec.tied_embeddings = false;
  spec.dropout = 0;
  spec.published_parameters = static_cast<std::int64_t>(published);
  spec.published_source =
      "Touvron et al. 2023, 'Llama 2', Table 1 (" + size + "); sizes from the released config.json (meta-llama)";
  return spec;
}

TransformerSpec bert(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads, double published,
                     std::string size) {
  TransformerSpec spec;
  spec.name = std::move(name);
  spec.description = "BERT " + size + " (Devlin et al. 2019): encoder, 512 tokens, WordPiece vocabulary of 30,522";
  spec.causal = false;
  spec.layers = layers;
  spec.hidden = hidden;
  spec.heads = heads;
  spec.kv_heads = heads;
  spec.ffn_hidden = 4 * hidden;
  spec.vocabulary = 30522;
  spec.sequence = 512;
  spec.published_parameters = static_cast<std::int64_t>(published);
  spec.published_source = "Devlin et al. 2019, 'BERT', sec. 3: " + size;
  return spec;
}

std::vector<TransformerSpec> transformer_zoo() {
  std::vector<TransformerSpec> zoo = {
      megatron_gpt("gpt-1.7b", "1.7B", 2304, 24, 24, 1.7e9),
      megatron_gpt("gpt-3.6b", "3.6B", 3072, 30, 32, 3.6e9),
      megatron_gpt("gpt-7.5b", "7.5B", 4096, 36, 32, 7.5e9),
      megatron_gpt("gpt-18.4b", "18.4B", 6144, 40, 48, 18.4e9),
      megatron_gpt("gpt-39.1b", "39.1B", 8192, 48, 64, 39.1e9),
      megatron_gpt("gpt-76.1b", "76.1B", 10240, 60, 80, 76.1e9),
      megatron_gpt("gpt-145.6b", "145.6B", 12288, 80, 96, 145.6e9),
      megatron_gpt("gpt-310.1b", "310.1B", 16384, 96, 128, 310.1e9),
      megatron_gpt("gpt-529.6b", "529.6B", 20480, 105, 128, 529.6e9),
      megatron_gpt("gpt-1008b", "1008B", 25600, 128, 160, 1008e9),
      gpt2("gpt2-small", 12, 768, 12, 124e6, "117M"),
      gpt2("gpt2-xl", 48, 1600, 25, 1542e6, "1542M"),
      llama2("llama2-7b", 32, 4096, 32, 32, 11008, 6.74e9, "7B"),
      llama2("llama2-70b", 80, 8192, 64, 8, 28672, 68.98e9, "70B"),
      bert("bert-base", 12, 768, 12, 110e6, "BASE, 110M parameters"),
      bert("bert-large", 24, 1024, 16, 340e6, "LARGE, 340M parameters"),
  };
  TransformerSpec bytes;  // small enough to train on two cores in minutes
  bytes.name = "gpt-bytes";
  bytes.description = "dsgd's byte-level GPT for native training on one machine: 4 blocks, h 64, 4 heads, 64 bytes";
  bytes.layers = 4;
  bytes.hidden = 64;
  bytes.heads = 4;
  bytes.kv_heads = 4;
  bytes.ffn_hidden = 256;
  bytes.vocabulary = 256;
  bytes.sequence = 64;
  bytes.dropout = 0;
  bytes.published_source = "none: dsgd's own model (docs/transformers.md \"Training natively\")";
  zoo.push_back(bytes);
  TransformerSpec gpt3 = megatron_gpt("gpt3-175b", "175B", 12288, 96, 96, 175e9);
  gpt3.description = "GPT-3 175B (Brown et al. 2020), 2048 tokens, Megatron-LM's vocabulary of 51,200";
  gpt3.published_source = "Brown et al. 2020, 'Language Models are Few-Shot Learners', Table 2.1: 175.0B";
  zoo.push_back(gpt3);
  return zoo;
}

}  // namespace

std::vector<std::string> transformer_names() {
  std::vector<std::string> names;
  for (const auto& spec : transformer_zoo()) names.push_back(spec.name);
  return names;
}

bool is_transformer(std::string_view name) {
  const auto names = transformer_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

TransformerSpec build_transformer(std::string_view name) {
  for (auto& spec : transformer_zoo()) {
    if (spec.name == name) return spec;
  }
  throw InputError("unknown transformer '" + std::string(name) + "'; known: " + join(transformer_names(), ", "));
}

namespace {

constexpr double kHalfBytes = 2;  // 16-bit activations and weights
constexpr double kMaskBytes = 1;  // a dropout mask element

// Builds a block's forward kernels and derives each one's backward passes.
class KernelList {
 public:
  KernelList(const TransformerSpec& model, std::int64_t micro_batch) : model_(model), batch_(micro_batch) {}

  // C (m x n) = A (m x k) B (k x n), `count` times; B a weight or, for attention, an activation.
  void gemm(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t count, bool weight) {
    forward_.push_back(gemm_kernel(name, KernelPass::kForward, GemmShape{m, n, k, count}));
    // dA = dC B^T (m x k over n) and dB = A^T dC (k x n over m), as many multiply-adds each.
    backward_.push_back({gemm_kernel(name, KernelPass::kBackwardData, GemmShape{m, k, n, count}),
                         gemm_kernel(name, weight ? KernelPass::kBackwardWeights : KernelPass::kBackwardData,
                                     GemmShape{k, n, m, count})});
  }

  // An elementwise or row-wise kernel moving `forward_bytes` forward and `backward_bytes` in its backward.
  void stream(const std::string& name, double forward_bytes, double backward_bytes) {
    forward_.push_back(stream_kernel(name, KernelPass::kForward, forward_bytes));
    backward_.push_back({stream_kernel(name, KernelPass::kBackwardData, backward_bytes)});
  }

  // Forward in order, then each kernel's backward passes, last kernel first.
  std::vector<LayerKernel> kernels() const {
    std::vector<LayerKernel> all = forward_;
    for (auto it = backward_.rbegin(); it != backward_.rend(); ++it) all.insert(all.end(), it->begin(), it->end());
    return all;
  }

 private:
  LayerKernel base(const std::string& name, KernelPass pass) const {
    LayerKernel kernel;
    kernel.pass = pass;
    kernel.model = model_.name;
    kernel.layer_name = name;
    kernel.batch = batch_;
    return kernel;
  }
  LayerKernel gemm_kernel(const std::string& name, KernelPass pass, const GemmShape& shape) const {
    LayerKernel kernel = base(name, pass);
    kernel.gemm = shape;
    kernel.flops = shape.flops();
    kernel.bytes = kHalfBytes * static_cast<double>(shape.count) *
                   static_cast<double>(shape.m * shape.k + shape.k * shape.n + shape.m * shape.n);
    return kernel;
  }
  LayerKernel stream_kernel(const std::string& name, KernelPass pass, double bytes) const {
    LayerKernel kernel = base(name, pass);
    kernel.bytes = bytes;
    return kernel;
  }

  const TransformerSpec& model_;
  std::int64_t batch_;
  std::vector<LayerKernel> forward_;
  std::vector<std::vector<LayerKernel>> backward_;
};

void check_split(const TransformerSpec& model, int tensor_parallel) {
  if (tensor_parallel < 1)
    throw InputError("tensor parallelism must be at least 1, got " + std::to_string(tensor_parallel));
  const std::int64_t t = tensor_parallel;
  // The vocabulary is padded to a multiple of the ranks (as Megatron-LM pads it), so it always splits.
  for (const auto& [what, count] : std::array<std::pair<const char*, std::int64_t>, 3>{
           {{"attention heads", model.heads}, {"key/value heads", model.kv_heads}, {"MLP width", model.ffn_hidden}}}) {
    if (count % t != 0) {
      throw InputError(model.name + ": its " + what + " (" + std::to_string(count) + ") do not divide among " +
                       std::to_string(t) + " tensor-parallel ranks");
    }
  }
}

}  // namespace

std::vector<LayerKernel> transformer_block_kernels(const TransformerSpec& model, std::int64_t micro_batch,
                                                   int tensor_parallel, bool sequence_parallel) {
  if (micro_batch < 1)
    throw InputError("a micro-batch needs at least one sequence, got " + std::to_string(micro_batch));
  check_split(model, tensor_parallel);
  const std::int64_t t = tensor_parallel;
  const std::int64_t s = model.sequence;
  const std::int64_t h = model.hidden;
  const std::int64_t d = model.head_dim();
  const std::int64_t tokens = micro_batch * s;
  const std::int64_t heads = model.heads / t;
  const std::int64_t kv = model.kv_heads / t;
  const std::int64_t ffn = model.ffn_hidden / t;
  // What a norm or residual sees: the whole hidden state, or its share of the sequence.
  const double row = static_cast<double>(sequence_parallel ? tokens / t : tokens) * static_cast<double>(h);
  const double scores = static_cast<double>(micro_batch * heads) * static_cast<double>(s * s);
  const bool dropout = model.dropout > 0;
  const double mask = dropout ? kMaskBytes : 0;

  KernelList list(model, micro_batch);
  const auto norm = [&](const std::string& name) {
    list.stream(name, 2 * row * kHalfBytes, 3 * row * kHalfBytes);  // x -> y; x, dy -> dx
  };
  // Bias, dropout and the residual add, fused as Megatron-LM does: out, residual -> sum (+ mask).
  const auto residual = [&](const std::string& name) {
    list.stream(name, row * (3 * kHalfBytes + mask), row * (2 * kHalfBytes + mask));
  };
  norm("attention.norm");
  list.gemm("attention.qkv", tokens, (heads + 2 * kv) * d, h, 1, true);
  if (model.position == TransformerPosition::kRotary) {
    const double rotated = static_cast<double>(tokens) * static_cast<double>((heads + kv) * d);
    list.stream("attention.rotary", 2 * rotated * kHalfBytes, 2 * rotated * kHalfBytes);
  }
  list.gemm("attention.scores", s, s, d, micro_batch * heads, false);
  list.stream("attention.softmax", 2 * scores * kHalfBytes, 3 * scores * kHalfBytes);  // scale, mask, softmax fused
  if (dropout) list.stream("attention.dropout", scores * (2 * kHalfBytes + mask), scores * (2 * kHalfBytes + mask));
  list.gemm("attention.context", s, d, s, micro_batch * heads, false);
  list.gemm("attention.output", tokens, h, heads * d, 1, true);
  residual("attention.residual");
  norm("mlp.norm");
  const double width = static_cast<double>(tokens) * static_cast<double>(ffn);
  if (model.mlp == TransformerMlp::kSwiGlu) {
    list.gemm("mlp.gate_up", tokens, 2 * ffn, h, 1, true);
    list.stream("mlp.swiglu", 3 * width * kHalfBytes, 5 * width * kHalfBytes);  // gate, up -> out; back: 3 in, 2 out
  } else {
    list.gemm("mlp.up", tokens, ffn, h, 1, true);
    list.stream("mlp.gelu", 2 * width * kHalfBytes, 3 * width * kHalfBytes);
  }
  list.gemm("mlp.down", tokens, h, ffn, 1, true);
  residual("mlp.residual");
  return list.kernels();
}

std::vector<LayerKernel> transformer_head_kernels(const TransformerSpec& model, std::int64_t micro_batch,
                                                  int tensor_parallel) {
  check_split(model, tensor_parallel);
  const std::int64_t tokens = micro_batch * model.sequence;
  const std::int64_t vocabulary = (model.vocabulary + tensor_parallel - 1) / tensor_parallel;
  const double row = static_cast<double>(tokens) * static_cast<double>(model.hidden);
  const double logits = static_cast<double>(tokens) * static_cast<double>(vocabulary);
  KernelList list(model, micro_batch);
  list.stream("head.norm", 2 * row * kHalfBytes, 3 * row * kHalfBytes);
  list.gemm("head.logits", tokens, vocabulary, model.hidden, 1, true);
  // Megatron-LM's vocab-parallel cross-entropy in fp32: the logits widened (2 B in, 4 out), their maximum (4), the
  // shift (4 + 4), exp (4 + 4), the sum (4) and the division (4 + 4): 38 B per logit; backward, the softmax less
  // the one-hot scaled (4 + 4) and narrowed (4 + 2): 14 B.
  list.stream("head.cross_entropy", 38 * logits, 14 * logits);
  return list.kernels();
}

std::vector<LayerKernel> transformer_embedding_kernels(const TransformerSpec& model, std::int64_t micro_batch,
                                                       int tensor_parallel) {
  check_split(model, tensor_parallel);
  const double row = static_cast<double>(micro_batch * model.sequence) * static_cast<double>(model.hidden);
  KernelList list(model, micro_batch);
  // The rows gathered (and the positions added); backward, the gradient rows added into the table.
  const double reads = model.position == TransformerPosition::kLearned ? 2 : 1;
  list.stream("embedding", (reads + 1) * row * kHalfBytes, 3 * row * kHalfBytes);
  return list.kernels();
}

namespace {

double gemm_flops(const std::vector<LayerKernel>& kernels, bool forward_only) {
  double flops = 0;
  for (const auto& kernel : kernels) {
    if (kernel.gemm && (!forward_only || kernel.pass == KernelPass::kForward)) flops += kernel.flops;
  }
  return flops;
}

}  // namespace

double transformer_iteration_flops(const TransformerSpec& model, std::int64_t batch, bool full_recomputation) {
  const auto block = transformer_block_kernels(model, batch, 1);
  const double blocks = static_cast<double>(model.layers) *
                        (gemm_flops(block, false) + (full_recomputation ? gemm_flops(block, true) : 0));
  return blocks + gemm_flops(transformer_head_kernels(model, batch, 1), false);
}

double megatron_iteration_flops(const TransformerSpec& model, std::int64_t batch, bool full_recomputation) {
  const double B = static_cast<double>(batch);
  const double s = static_cast<double>(model.sequence);
  const double l = static_cast<double>(model.layers);
  const double h = static_cast<double>(model.hidden);
  const double V = static_cast<double>(model.vocabulary);
  if (full_recomputation) return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

double block_activation_bytes(const TransformerSpec& model, std::int64_t micro_batch, int tensor_parallel,
                              Recomputation recomputation, bool sequence_parallel) {
  check_split(model, tensor_parallel);
  const double t = tensor_parallel;
  const double tokens = static_cast<double>(micro_batch * model.sequence);
  const double h = static_cast<double>(model.hidden);
  // Tensors the whole hidden state wide: split along the sequence with sequence parallelism, else on every rank.
  const double row = tokens * h * (sequence_parallel ? 1 / t : 1);
  if (recomputation == Recomputation::kFull) return kHalfBytes * row;  // the block's input
  const bool dropout = model.dropout > 0;
  const double d = static_cast<double>(model.head_dim());
  const double q = tokens * static_cast<double>(model.heads) * d / t;
  const double kv = tokens * static_cast<double>(model.kv_heads) * d / t;
  const double ffn = tokens * static_cast<double>(model.ffn_hidden) / t;
  double bytes = 0;
  bytes += 2 * kHalfBytes * row;   // the two norms' inputs
  bytes += kHalfBytes * row;       // the QKV product's input (the norm's output)
  bytes += kHalfBytes * (q + kv);  // Q and K for the scores
  bytes += kHalfBytes * kv;        // V for the context
  bytes += kHalfBytes * q;         // the output product's input
  bytes += kHalfBytes * row;       // the MLP's input
  const double up = model.mlp == TransformerMlp::kSwiGlu ? 2 : 1;
  bytes += kHalfBytes * (up * ffn + ffn);      // the activation's input and output
  if (dropout) bytes += 2 * kMaskBytes * row;  // the two residual dropouts' masks
  if (recomputation == Recomputation::kNone) {
    const double scores = static_cast<double>(micro_batch) * static_cast<double>(model.heads) / t *
                          static_cast<double>(model.sequence) * static_cast<double>(model.sequence);
    bytes += kHalfBytes * scores;                              // softmax output
    if (dropout) bytes += (kMaskBytes + kHalfBytes) * scores;  // its dropout's mask and output
  }
  return bytes;
}

}  // namespace dsgd
