#pragma once
// A tiny GPT and its token stream for the tests of algorithms/parallel_gpt on every executor
// (parallel_gpt_test.cpp: threads and SimGrid; parallel_gpt_mpi_test.cpp: MPI against threads), and what a run
// leaves for them to compare.

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/parallel_gpt.hpp"
#include "core/hash.hpp"
#include "core/splitmix.hpp"

namespace dsgd::algorithms::testing::parallel_gpt {

inline TransformerSpec tiny(bool tied) {
  TransformerSpec model;
  model.name = "gpt-test";
  model.layers = 4;
  model.hidden = 16;
  model.heads = 4;
  model.kv_heads = 4;
  model.ffn_hidden = 32;
  model.vocabulary = 24;
  model.sequence = 6;
  model.tied_embeddings = tied;
  return model;
}

// Tokens from a counter: the same for every rank that asks.
inline void tokens(std::int64_t iteration, int replica, int micro_batch, std::span<std::int32_t> ids,
                   std::span<std::int32_t> targets) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::uint64_t key = (static_cast<std::uint64_t>(iteration) << 40) ^
                              (static_cast<std::uint64_t>(replica) << 32) ^
                              (static_cast<std::uint64_t>(micro_batch) << 24) ^ i;
    ids[i] = static_cast<std::int32_t>(splitmix64(key) % 24);
    // A learnable rule: the next token is the current one plus 1.
    targets[i] = (ids[i] + 1) % 24;
  }
}

inline ParallelGptOptions options(Grid3d grid, int micro_batches, bool tied = false) {
  ParallelGptOptions out;
  out.model = tiny(tied);
  out.grid = grid;
  out.micro_batch = 2;
  out.micro_batches = micro_batches;
  out.adamw.learning_rate = 1e-2F;
  out.adamw.weight_decay = 0.01F;
  out.seed = 7;
  return out;
}

// Each rank's tensors (name, tensor-parallel rank) with their values or gradients, gathered after a run.
struct Gathered {
  std::map<int, std::uint64_t> rank_hashes;  // per world rank: its chunks' weights
  std::mutex mutex;
  std::map<std::pair<std::string, int>, std::vector<float>> gradients;
  std::map<std::pair<std::string, int>, std::vector<float>> parameters;
  std::map<int, std::vector<double>> losses;  // per world rank
  std::map<std::pair<std::string, int>, nn::GptTensor> shapes;
};

inline ParallelGptHooks gathering(Gathered& into, const Comm& comm, bool step_last) {
  ParallelGptHooks hooks;
  hooks.step_last = step_last;
  const int rank = comm.rank();
  hooks.on_iteration = [&into, rank](const ParallelGptProgress& progress) {
    const std::lock_guard lock(into.mutex);
    into.losses[rank].push_back(progress.loss);
  };
  hooks.on_finish = [&into, rank](int, nn::GptStage& stage) {
    const std::lock_guard lock(into.mutex);
    auto& hash = into.rank_hashes[rank];
    hash = hash * 1099511628211ULL ^ fnv1a(stage.parameters().data(), stage.parameters().size() * sizeof(float));
    for (const auto& tensor : stage.tensors()) {
      const auto key = std::make_pair(tensor.name, stage.shard().tensor_rank);
      const auto at = static_cast<std::size_t>(tensor.offset);
      const auto size = static_cast<std::size_t>(tensor.size());
      into.gradients[key].assign(stage.gradients().begin() + at, stage.gradients().begin() + at + size);
      into.parameters[key].assign(stage.parameters().begin() + at, stage.parameters().begin() + at + size);
      into.shapes[key] = tensor;
    }
  };
  return hooks;
}

inline std::uint64_t weights_hash(const Gathered& run) {
  std::uint64_t hash = 0;
  for (const auto& [key, values] : run.parameters) {
    hash = hash * 1099511628211ULL ^ fnv1a(values.data(), values.size() * sizeof(float));
  }
  return hash;
}

}  // namespace dsgd::algorithms::testing::parallel_gpt
