// A GPT cut into tensor-parallel shards and pipeline stages (core/nn/gpt.hpp) on a tiny model: 2 layers, hidden
// 16, 2 heads, ffn 64, vocabulary 11, sequence 5, 2 sequences.
//  * One stage, one shard: the loss against a naive double-precision forward written here from the model's
//    definition, and every tensor's gradient at sampled elements against central differences of that forward.
//  * Initialisation: every shard's parameters are bit for bit the slice of the unsharded model's.
//  * Tensor parallel (2 shards on two threads that meet in the reductions): loss within 1e-5 relative, each
//    shard's gradients within 1e-4 of the largest of the unsharded slice, replicated tensors identical on both.
//  * Pipeline stages: the same loss and gradients, bit for bit (tied embeddings: once the two copies' gradients are
//    summed, within 1e-6).
//  * Two micro-batches in flight: F0 F1 B1 B0 against F0 B0 F1 B1, within 1e-6 (see the test).
//  * AdamW's decay mask, training on one batch, refusals.

#include "core/nn/gpt.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::nn {
namespace {

constexpr std::uint64_t kSeed = 42;
constexpr std::int64_t kSequences = 2;

TransformerSpec tiny_gpt(bool tied) {
  TransformerSpec model;
  model.name = "tiny";
  model.layers = 2;
  model.hidden = 16;
  model.heads = 2;
  model.kv_heads = 2;
  model.ffn_hidden = 64;
  model.vocabulary = 11;
  model.sequence = 5;
  model.tied_embeddings = tied;
  return model;
}

std::int64_t tokens_of(const TransformerSpec& model) { return kSequences * model.sequence; }

std::vector<std::int32_t> random_ids(const TransformerSpec& model, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(model.vocabulary) - 1);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(tokens_of(model)));
  for (std::int32_t& value : ids) value = id(engine);
  return ids;
}

GptShard whole(const TransformerSpec& model) {
  return {.tensor_parallel = 1,
          .tensor_rank = 0,
          .first_layer = 0,
          .layers = model.layers,
          .embedding = true,
          .head = true};
}

const GptTensor& tensor_named(const GptStage& stage, const std::string& name) {
  for (const GptTensor& tensor : stage.tensors()) {
    if (tensor.name == name) return tensor;
  }
  throw std::runtime_error("no tensor " + name);
}

std::vector<float> part(std::span<float> buffer, const GptTensor& tensor) {
  const auto begin = buffer.begin() + tensor.offset;
  return {begin, begin + tensor.size()};
}

// The shard's part of a full tensor's values (padding rows 0).
std::vector<float> slice(const std::vector<float>& full, const GptTensor& shard) {
  std::vector<float> out(static_cast<std::size_t>(shard.size()), 0.0f);
  for (std::int64_t r = 0; r < shard.shard_rows; ++r) {
    for (std::int64_t c = 0; c < shard.shard_columns; ++c) {
      const std::int64_t row = shard.split == GptSplit::kRows ? shard.first + r : r;
      const std::int64_t column = shard.split == GptSplit::kColumns ? shard.first + c : c;
      if (row < shard.rows) out[r * shard.shard_columns + c] = full[row * shard.columns + column];
    }
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The key bias's gradient is zero in exact arithmetic (a query's softmax does not change when every key it sees
// shifts by the same vector), so what a backward computes for it is rounding noise: it is compared against the
// model's largest gradient instead of its own.
bool vanishes(const std::string& name) { return name.ends_with("attention.key.bias"); }

double largest_of(std::span<const float> values) {
  double largest = 0.0;
  for (const float v : values) largest = std::max(largest, static_cast<double>(std::fabs(v)));
  return largest;
}

// |actual - expected| <= tolerance x the largest |expected| of the tensor (of the model for a vanishing one),
// element by element.
void expect_close(const std::string& what, const std::vector<float>& actual, const std::vector<float>& expected,
                  double tolerance, double model_largest = 0.0) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  const double largest = vanishes(what.substr(0, what.find(' '))) ? model_largest : largest_of(expected);
  int failures = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::fabs(static_cast<double>(actual[i]) - expected[i]) > tolerance * largest && ++failures <= 3) {
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << ", expected " << expected[i] << " (largest " << largest
                    << ")";
    }
  }
}

// ---- A naive double-precision GPT ---------------------------------------------------------------------------

using Tensors = std::map<std::string, std::vector<double>>;

Tensors tensors_in_double(GptStage& stage) {
  Tensors out;
  for (const GptTensor& tensor : stage.tensors()) {
    const std::vector<float> values = part(stage.parameters(), tensor);
    out[tensor.name] = std::vector<double>(values.begin(), values.end());
  }
  return out;
}

void layer_norm(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                std::vector<double>& y, std::int64_t tokens, std::int64_t h) {
  for (std::int64_t t = 0; t < tokens; ++t) {
    double mean = 0.0;
    double variance = 0.0;
    for (std::int64_t j = 0; j < h; ++j) mean += x[t * h + j] / static_cast<double>(h);
    for (std::int64_t j = 0; j < h; ++j) variance += std::pow(x[t * h + j] - mean, 2) / static_cast<double>(h);
    for (std::int64_t j = 0; j < h; ++j) {
      y[t * h + j] = (x[t * h + j] - mean) / std::sqrt(variance + 1e-5) * gamma[j] + beta[j];
    }
  }
}

// y = x w + b, x [tokens x in], w [in x out].
std::vector<double> affine(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                           std::int64_t tokens, std::int64_t in, std::int64_t out) {
  std::vector<double> y(static_cast<std::size_t>(tokens * out));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t o = 0; o < out; ++o) {
      double sum = b[o];
      for (std::int64_t i = 0; i < in; ++i) sum += x[t * in + i] * w[i * out + o];
      y[t * out + o] = sum;
    }
  }
  return y;
}

// The mean cross-entropy of GPT-2's forward (pre-norm blocks, tanh GELU, learned positions), from the definition.
double reference_loss(const TransformerSpec& m, const Tensors& p, const std::vector<std::int32_t>& ids,
                      const std::vector<std::int32_t>& targets) {
  const std::int64_t h = m.hidden;
  const std::int64_t s = m.sequence;
  const std::int64_t d = m.head_dim();
  const auto tokens = static_cast<std::int64_t>(ids.size());
  std::vector<double> x(static_cast<std::size_t>(tokens * h));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t j = 0; j < h; ++j) {
      x[t * h + j] = p.at("embedding.words")[ids[t] * h + j] + p.at("embedding.positions")[(t % s) * h + j];
    }
  }
  std::vector<double> n(x.size());
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const std::string k = "layer" + std::to_string(l) + ".";
    layer_norm(x, p.at(k + "norm1.gamma"), p.at(k + "norm1.beta"), n, tokens, h);
    const auto q = affine(n, p.at(k + "attention.query.weight"), p.at(k + "attention.query.bias"), tokens, h, h);
    const auto key = affine(n, p.at(k + "attention.key.weight"), p.at(k + "attention.key.bias"), tokens, h, h);
    const auto v = affine(n, p.at(k + "attention.value.weight"), p.at(k + "attention.value.bias"), tokens, h, h);
    std::vector<double> attention(x.size(), 0.0);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t start = t / s * s;  // the first token of t's sequence: t sees start .. t
      for (std::int64_t head = 0; head < m.heads; ++head) {
        std::vector<double> score;
        for (std::int64_t u = start; u <= t; ++u) {
          double dot = 0.0;
          for (std::int64_t c = 0; c < d; ++c) dot += q[t * h + head * d + c] * key[u * h + head * d + c];
          score.push_back(dot / std::sqrt(static_cast<double>(d)));
        }
        const double top = *std::max_element(score.begin(), score.end());
        double total = 0.0;
        for (double& e : score) total += (e = std::exp(e - top));
        for (std::int64_t u = start; u <= t; ++u) {
          for (std::int64_t c = 0; c < d; ++c) {
            attention[t * h + head * d + c] += score[u - start] / total * v[u * h + head * d + c];
          }
        }
      }
    }
    const auto out =
        affine(attention, p.at(k + "attention.output.weight"), p.at(k + "attention.output.bias"), tokens, h, h);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += out[i];
    layer_norm(x, p.at(k + "norm2.gamma"), p.at(k + "norm2.beta"), n, tokens, h);
    auto fc = affine(n, p.at(k + "mlp.fc1.weight"), p.at(k + "mlp.fc1.bias"), tokens, h, m.ffn_hidden);
    for (double& a : fc) a = 0.5 * a * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (a + 0.044715 * a * a * a)));
    const auto mlp = affine(fc, p.at(k + "mlp.fc2.weight"), p.at(k + "mlp.fc2.bias"), tokens, m.ffn_hidden, h);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += mlp[i];
  }
  layer_norm(x, p.at("head.norm.gamma"), p.at("head.norm.beta"), n, tokens, h);
  const std::vector<double>& words = p.at(m.tied_embeddings ? "embedding.words" : "head.words");
  double loss = 0.0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::vector<double> logits(static_cast<std::size_t>(m.vocabulary));
    for (std::int64_t c = 0; c < m.vocabulary; ++c) {
      for (std::int64_t j = 0; j < h; ++j) logits[c] += n[t * h + j] * words[c * h + j];
    }
    const double top = *std::max_element(logits.begin(), logits.end());
    double total = 0.0;
    for (const double logit : logits) total += std::exp(logit - top);
    loss += std::log(total) + top - logits[targets[t]];
  }
  return loss / static_cast<double>(tokens);
}

TEST(NnGpt, OneStageMatchesADoublePrecisionForwardAndItsFiniteDifferences) {
  for (const bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied embeddings" : "untied embeddings");
    const TransformerSpec model = tiny_gpt(tied);
    GptStage stage(model, whole(model), kSeed);
    // Larger values than the initialisation's, so that every path carries a gradient finite differences resolve.
    std::mt19937 engine(7);
    std::uniform_real_distribution<float> uniform(-0.3f, 0.3f);
    for (const GptTensor& tensor : stage.tensors()) {
      const float centre = tensor.name.ends_with(".gamma") ? 1.0f : 0.0f;
      for (std::int64_t i = 0; i < tensor.size(); ++i) stage.parameters()[tensor.offset + i] = centre + uniform(engine);
    }
    const auto ids = random_ids(model, 1);
    const auto targets = random_ids(model, 2);
    const float loss = stage.forward(0, ids, targets)[0];
    EXPECT_EQ(stage.backward(0, {}).size(), 0U);
    EXPECT_EQ(stage.in_flight(), 0U);

    Tensors reference = tensors_in_double(stage);
    const double expected = reference_loss(model, reference, ids, targets);
    EXPECT_NEAR(loss, expected, 1e-5 * expected) << "expectation: the double forward's " << expected;

    // Central differences (step 1e-3, in double) at up to 12 elements of every tensor; an element passes when
    // |numeric - analytic| <= 1e-3 |analytic| + 1e-4 x the tensor's largest analytic gradient.
    for (const GptTensor& tensor : stage.tensors()) {
      const std::vector<float> analytic = part(stage.gradients(), tensor);
      const double largest = vanishes(tensor.name) ? largest_of(stage.gradients()) : largest_of(analytic);
      ASSERT_GT(largest, 0.0) << tensor.name << ": a gradient of zeros checks nothing";
      std::vector<double>& values = reference[tensor.name];
      const std::int64_t stride = std::max<std::int64_t>(1, tensor.size() / 12);
      for (std::int64_t i = 0; i < tensor.size(); i += stride) {
        const double original = values[i];
        values[i] = original + 1e-3;
        const double up = reference_loss(model, reference, ids, targets);
        values[i] = original - 1e-3;
        const double down = reference_loss(model, reference, ids, targets);
        values[i] = original;
        const double numeric = (up - down) / 2e-3;
        EXPECT_NEAR(analytic[i], numeric, 1e-3 * std::fabs(numeric) + 1e-4 * largest) << tensor.name << "[" << i << "]";
      }
    }
  }
}

// ---- Two tensor-parallel ranks on two threads ---------------------------------------------------------------

// Sum and max over `ranks` threads that meet at a barrier: each rank copies its values into its slot, all wait,
// each reduces the slots in rank order (the same bits on every rank), all wait again before a slot is reused.
class LockstepGroup {
 public:
  explicit LockstepGroup(int ranks) : slots_(static_cast<std::size_t>(ranks)), barrier_(ranks) {}

  TensorGroup group(int rank) {
    return {.sum = [this, rank](std::span<float> values) { reduce(rank, values, false); },
            .max = [this, rank](std::span<float> values) { reduce(rank, values, true); }};
  }

  // Runs body(rank) on one thread per rank and rethrows the first failure. A failing rank leaves the barrier, so
  // the others run on (reducing nothing) instead of waiting for it forever.
  void run(const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(slots_.size());
    for (std::size_t rank = 0; rank < slots_.size(); ++rank) {
      threads.emplace_back([&, rank] {
        try {
          body(static_cast<int>(rank));
        } catch (...) {
          errors[rank] = std::current_exception();
          failed_ = true;
          barrier_.arrive_and_drop();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::exception_ptr& error : errors) {
      if (error) std::rethrow_exception(error);
    }
  }

 private:
  void reduce(int rank, std::span<float> values, bool max) {
    if (failed_) return;
    slots_[rank].assign(values.begin(), values.end());
    barrier_.arrive_and_wait();
    if (failed_) return;
    for (std::size_t i = 0; i < values.size(); ++i) {
      float result = slots_[0][i];
      for (std::size_t r = 1; r < slots_.size(); ++r)
        result = max ? std::max(result, slots_[r][i]) : result + slots_[r][i];
      values[i] = result;
    }
    barrier_.arrive_and_wait();
  }

  std::vector<std::vector<float>> slots_;
  std::barrier<> barrier_;
  std::atomic<bool> failed_ = false;
};

struct Split {
  const char* name;
  bool tied;
  std::int64_t cut;  // the first stage holds layers 0 .. cut - 1 with the embedding; cut = layers: one stage
};

TEST(NnGpt, TwoTensorParallelShardsMatchTheUnshardedModel) {
  for (const Split split : {Split{"untied, one stage", false, 2}, Split{"tied, one stage", true, 2},
                            Split{"untied, two stages", false, 1}, Split{"tied, two stages", true, 1}}) {
    SCOPED_TRACE(split.name);
    const TransformerSpec model = tiny_gpt(split.tied);
    const auto ids = random_ids(model, 3);
    const auto targets = random_ids(model, 4);
    GptStage full(model, whole(model), kSeed);
    const float full_loss = full.forward(0, ids, targets)[0];
    full.backward(0, {});

    constexpr int kRanks = 2;
    LockstepGroup group(kRanks);
    const bool one_stage = split.cut == model.layers;
    // stages[rank] holds the rank's first stage and, with two, its second.
    std::vector<std::vector<GptStage>> stages(kRanks);
    for (int rank = 0; rank < kRanks; ++rank) {
      const GptShard first{.tensor_parallel = kRanks,
                           .tensor_rank = rank,
                           .first_layer = 0,
                           .layers = split.cut,
                           .embedding = true,
                           .head = one_stage};
      stages[rank].emplace_back(model, first, kSeed, group.group(rank));
      if (!one_stage) {
        const GptShard second{.tensor_parallel = kRanks,
                              .tensor_rank = rank,
                              .first_layer = split.cut,
                              .layers = model.layers - split.cut,
                              .embedding = false,
                              .head = true};
        stages[rank].emplace_back(model, second, kSeed, group.group(rank));
      }
    }
    std::vector<float> losses(kRanks);
    group.run([&](int rank) {
      std::vector<GptStage>& mine = stages[rank];
      if (one_stage) {
        losses[rank] = mine[0].forward(0, ids, targets)[0];
        mine[0].backward(0, {});
        return;
      }
      const std::span<const float> hidden = mine[0].forward(0, ids);
      losses[rank] = mine[1].forward(0, hidden, targets)[0];
      const std::span<const float> d_hidden = mine[1].backward(0, {});
      const std::vector<float> d_copy(d_hidden.begin(), d_hidden.end());
      mine[0].backward(0, d_copy);
    });
    EXPECT_EQ(losses[0], losses[1]);
    EXPECT_NEAR(losses[0], full_loss, 1e-5 * full_loss) << "expectation: the unsharded model's " << full_loss;

    // Tied across stages: the caller sums the two copies' gradients (Megatron-LM's embedding group).
    if (split.tied && !one_stage) {
      for (int rank = 0; rank < kRanks; ++rank) {
        const std::span<float> first = stages[rank][0].tied_embedding_gradients();
        const std::span<float> last = stages[rank][1].tied_embedding_gradients();
        ASSERT_EQ(first.size(), last.size());
        ASSERT_FALSE(first.empty());
        for (std::size_t i = 0; i < first.size(); ++i) first[i] = last[i] = first[i] + last[i];
      }
    }
    for (std::size_t s = 0; s < stages[0].size(); ++s) {
      for (std::size_t i = 0; i < stages[0][s].tensors().size(); ++i) {
        const std::string& name = stages[0][s].tensors()[i].name;
        const std::vector<float> full_gradient = part(full.gradients(), tensor_named(full, name));
        std::vector<std::vector<float>> gradients;
        for (int rank = 0; rank < kRanks; ++rank) {
          const GptTensor& mine = stages[rank][s].tensors()[i];
          gradients.push_back(part(stages[rank][s].gradients(), mine));
          expect_close(name + " on rank " + std::to_string(rank), gradients.back(), slice(full_gradient, mine), 1e-4,
                       largest_of(full.gradients()));
        }
        if (stages[0][s].tensors()[i].split == GptSplit::kReplicated) {
          EXPECT_TRUE(same_bits(gradients[0], gradients[1])) << name << " differs between the ranks";
        }
      }
    }
  }
}

TEST(NnGpt, EveryShardStartsAsItsSliceOfTheUnshardedModel) {
  for (const bool tied : {false, true}) {
    const TransformerSpec model = tiny_gpt(tied);
    GptStage full(model, whole(model), kSeed);
    for (const int t : {2}) {
      for (int rank = 0; rank < t; ++rank) {
        TensorGroup identity{.sum = [](std::span<float>) {}, .max = [](std::span<float>) {}};
        for (const GptShard shard : {GptShard{t, rank, 0, 1, true, false}, GptShard{t, rank, 1, 1, false, true}}) {
          GptStage stage(model, shard, kSeed, identity);
          EXPECT_EQ(stage.padded_vocabulary(), 12);
          for (const GptTensor& tensor : stage.tensors()) {
            const GptTensor& full_tensor = tensor_named(full, tensor.name);
            EXPECT_TRUE(
                same_bits(part(stage.parameters(), tensor), slice(part(full.parameters(), full_tensor), tensor)))
                << tensor.name << " on rank " << rank << " of layers from " << shard.first_layer;
          }
        }
      }
    }
  }
}

// ---- Pipeline stages and micro-batches ----------------------------------------------------------------------

TEST(NnGpt, PipelineStagesGiveTheOneStageLossAndGradientsBitForBit) {
  for (const bool tied : {false, true}) {
    const TransformerSpec model = tiny_gpt(tied);
    const auto ids = random_ids(model, 5);
    const auto targets = random_ids(model, 6);
    GptStage full(model, whole(model), kSeed);
    const float full_loss = full.forward(0, ids, targets)[0];
    full.backward(0, {}, 0.5f);
    // cut 0: an embedding-only first stage; cut = layers: a head-only last stage.
    for (std::int64_t cut = 0; cut <= model.layers; ++cut) {
      SCOPED_TRACE(std::string(tied ? "tied" : "untied") + ", cut at layer " + std::to_string(cut));
      GptStage first(model, {1, 0, 0, cut, true, false}, kSeed);
      GptStage last(model, {1, 0, cut, model.layers - cut, false, true}, kSeed);
      const std::span<const float> hidden = first.forward(0, ids);
      const float loss = last.forward(0, hidden, targets)[0];
      EXPECT_EQ(loss, full_loss);
      const std::span<const float> d_hidden = last.backward(0, {}, 0.5f);
      EXPECT_TRUE(first.backward(0, d_hidden).empty());
      for (GptStage* stage : {&first, &last}) {
        for (const GptTensor& tensor : stage->tensors()) {
          const std::vector<float> expected = part(full.gradients(), tensor_named(full, tensor.name));
          if (tensor.name != "embedding.words" || !tied) {
            EXPECT_TRUE(same_bits(part(stage->gradients(), tensor), expected)) << tensor.name;
          }
        }
      }
      if (tied) {
        // The one stage adds the lookup's rows onto the head's gradient; the two stages sum them at the end, so a
        // row that several tokens share rounds differently.
        std::vector<float> sum(first.tied_embedding_gradients().begin(), first.tied_embedding_gradients().end());
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += last.tied_embedding_gradients()[i];
        expect_close("embedding.words", sum, part(full.gradients(), tensor_named(full, "embedding.words")), 1e-6);
      }
    }
  }
}

TEST(NnGpt, MicroBatchesInFlightAccumulateTheSameGradients) {
  const TransformerSpec model = tiny_gpt(false);
  const std::vector<std::vector<std::int32_t>> ids = {random_ids(model, 7), random_ids(model, 8)};
  const std::vector<std::vector<std::int32_t>> targets = {random_ids(model, 9), random_ids(model, 10)};
  GptStage one_by_one(model, whole(model), kSeed);
  GptStage in_flight(model, whole(model), kSeed);
  std::vector<float> losses(2);
  for (int mb = 0; mb < 2; ++mb) {
    losses[mb] = one_by_one.forward(mb, ids[mb], targets[mb])[0];
    one_by_one.backward(mb, {}, 0.5f);
  }
  const float loss0 = in_flight.forward(0, ids[0], targets[0])[0];
  const float loss1 = in_flight.forward(1, ids[1], targets[1])[0];
  EXPECT_EQ(in_flight.in_flight(), 2U);
  in_flight.backward(1, {}, 0.5f);
  in_flight.backward(0, {}, 0.5f);
  EXPECT_EQ(loss0, losses[0]);
  EXPECT_EQ(loss1, losses[1]);
  // Not bit for bit: the kernels add each token's contribution straight into the gradient buffer, so the order
  // of the micro-batches is the order of the additions, and float addition does not associate.
  for (const GptTensor& tensor : one_by_one.tensors()) {
    expect_close(tensor.name, part(in_flight.gradients(), tensor), part(one_by_one.gradients(), tensor), 1e-6,
                 largest_of(one_by_one.gradients()));
  }
}

// ---- Optimiser and refusals ---------------------------------------------------------------------------------

TEST(NnGpt, AdamWDecaysWeightsNotBiasesOrNormsAndTrainsOneBatch) {
  const TransformerSpec model = tiny_gpt(true);
  GptStage stage(model, whole(model), kSeed);
  // Zero gradients and zero moments: the step is the decay alone, p (1 - lr wd).
  const std::vector<float> before(stage.parameters().begin(), stage.parameters().end());
  stage.adamw_step(1, {.learning_rate = 0.1f, .weight_decay = 0.5f});
  for (const GptTensor& tensor : stage.tensors()) {
    for (std::int64_t i = 0; i < tensor.size(); ++i) {
      const float old = before[tensor.offset + i];
      ASSERT_EQ(stage.parameters()[tensor.offset + i], tensor.decay ? old * (1.0f - 0.1f * 0.5f) : old)
          << tensor.name << "[" << i << "]";
    }
  }

  GptStage trained(model, whole(model), kSeed);
  const auto ids = random_ids(model, 11);
  const auto targets = random_ids(model, 12);
  float first = 0.0f;
  float loss = 0.0f;
  for (std::int64_t step = 1; step <= 30; ++step) {
    trained.zero_gradients();
    loss = trained.forward(0, ids, targets)[0];
    if (step == 1) first = loss;
    trained.backward(0, {});
    trained.adamw_step(step, {.learning_rate = 1e-2f});
  }
  EXPECT_LT(loss, 0.5f * first) << "expectation: 30 AdamW steps on one batch of 10 tokens halve the loss";
}

using dsgd::testing::expect_input_error;

TEST(NnGpt, RefusesWhatItDoesNotRun) {
  const TransformerSpec model = tiny_gpt(false);
  TransformerSpec llama = model;
  llama.norm = TransformerNorm::kRmsNorm;
  expect_input_error([&] { GptStage(llama, whole(llama), kSeed); }, "LayerNorm");
  TransformerSpec grouped = model;
  grouped.kv_heads = 1;
  expect_input_error([&] { GptStage(grouped, whole(grouped), kSeed); }, "kv_heads = 1");
  expect_input_error([&] { GptStage(model, {3, 0, 0, 2, true, true}, kSeed); }, "tensor_parallel = 3");
  expect_input_error([&] { GptStage(model, {2, 0, 0, 2, true, true}, kSeed); }, "sum and max");
  expect_input_error([&] { GptStage(model, {1, 0, 1, 2, false, true}, kSeed); }, "outside the model");
  expect_input_error([&] { GptStage(model, {1, 0, 1, 1, true, true}, kSeed); }, "embedding stage must start");
  expect_input_error([&] { GptStage(model, {1, 0, 1, 0, false, false}, kSeed); }, "must hold");

  GptStage stage(model, whole(model), kSeed);
  const auto ids = random_ids(model, 13);
  std::vector<std::int32_t> bad = ids;
  bad[3] = 11;
  expect_input_error([&] { stage.forward(0, bad, ids); }, "ids[3] = 11");
  expect_input_error([&] { stage.forward(0, ids); }, "takes the targets");
  expect_input_error([&] { stage.forward(0, std::span(ids).first(7), ids); }, "sequences x 5");
  expect_input_error([&] { stage.backward(0, {}); }, "not in flight");
  stage.forward(0, ids, ids);
  expect_input_error([&] { stage.forward(0, ids, ids); }, "already in flight");
}

}  // namespace
}  // namespace dsgd::nn
