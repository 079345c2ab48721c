#include "algorithms/parallel_gpt.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <string>

#include "core/collectives.hpp"
#include "core/error.hpp"
#include "core/transformer.hpp"

namespace dsgd::algorithms {

namespace {

// Group tag blocks (core/group_comm.hpp): a pair of ranks is in at most one of the tensor, pipeline and data groups,
// but the tied embedding's group pairs the first and last stage, which are also pipeline peers.
constexpr int kTensorBlock = 1;
constexpr int kPipelineBlock = 2;
constexpr int kDataBlock = 3;
constexpr int kEmbeddingBlock = 4;

// Tags of the tensor group's two reductions, kept apart so a max never matches a sum.
constexpr Tag kSumTag = kFirstCollectiveTag;
constexpr Tag kMaxTag = 1;

// A hidden state (or its gradient) between virtual stages: one tag per micro-batch, virtual stage and direction.
Tag pipeline_tag(int micro_batch, int from_virtual_stage, bool backward, int virtual_stages) {
  const long long tag =
      (static_cast<long long>(micro_batch) * virtual_stages + from_virtual_stage) * 2 + (backward ? 1 : 0);
  if (tag >= kFirstCollectiveTag) {
    throw InputError("parallel GPT: " + std::to_string(micro_batch + 1) + " micro-batches over " +
                     std::to_string(virtual_stages) + " virtual stages need more message tags than there are");
  }
  return static_cast<Tag>(tag);
}

// Every rank sends its values to every other and keeps the element-wise maximum: exact, so any order gives the same
// bits.
void allreduce_max(Comm& group, std::span<float> values) {
  const int size = group.size();
  if (size == 1) return;
  std::vector<float> incoming(values.size() * static_cast<std::size_t>(size - 1));
  std::vector<RequestPtr> requests;
  const std::size_t bytes = values.size() * sizeof(float);
  for (int peer = 0, slot = 0; peer < size; ++peer) {
    if (peer == group.rank()) continue;
    requests.push_back(group.irecv(peer, kMaxTag, incoming.data() + values.size() * static_cast<std::size_t>(slot++),
                                   bytes, Category::kGpuGpuPara));
  }
  for (int peer = 0; peer < size; ++peer) {
    if (peer != group.rank())
      requests.push_back(group.isend(peer, kMaxTag, values.data(), bytes, Category::kGpuGpuPara));
  }
  for (auto& request : requests) request->wait();
  for (std::size_t slot = 0; slot + 1 < static_cast<std::size_t>(size); ++slot) {
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::max(values[i], incoming[slot * values.size() + i]);
  }
}

Floats floats_of(std::span<float> values) { return {values.data(), values.size()}; }

// AdamW on the part `shard` of a stage's flat buffers, each tensor with its own weight decay; m and v hold the
// shard's moments. Element-wise, so any split of the buffer gives the same bits.
void step_shard(nn::GptStage& stage, const Shard& shard, std::span<float> m, std::span<float> v, std::int64_t step,
                const nn::AdamWOptions& options) {
  const auto parameters = stage.parameters();
  const auto gradients = stage.gradients();
  for (const nn::GptTensor& tensor : stage.tensors()) {
    const auto begin = std::max<std::size_t>(static_cast<std::size_t>(tensor.offset), shard.offset);
    const auto end =
        std::min<std::size_t>(static_cast<std::size_t>(tensor.offset + tensor.size()), shard.offset + shard.count);
    if (begin >= end) continue;
    nn::AdamWOptions tensor_options = options;
    if (!tensor.decay) tensor_options.weight_decay = 0;
    const std::size_t count = end - begin;
    nn::adamw_step(parameters.subspan(begin, count), gradients.subspan(begin, count),
                   m.subspan(begin - shard.offset, count), v.subspan(begin - shard.offset, count), step,
                   tensor_options);
  }
}

// The kernels of one forward (or backward) op of a chunk, as core/transformer.hpp counts them: its blocks', plus the
// embedding's on the first virtual stage and the output layer's on the last. The native GPT runs no dropout.
struct ChunkKernels {
  std::vector<LayerKernel> forward;
  std::vector<LayerKernel> backward;
  double forward_flops = 0;
  double backward_flops = 0;
};

ChunkKernels chunk_kernels(const ParallelGptOptions& options, std::int64_t layers, bool embedding, bool head) {
  TransformerSpec model = options.model;
  model.dropout = 0;
  const int t = options.grid.tp;
  ChunkKernels kernels;
  const auto add = [&kernels](const std::vector<LayerKernel>& list) {
    for (const LayerKernel& kernel : list) {
      auto& into = kernel.pass == KernelPass::kForward ? kernels.forward : kernels.backward;
      into.push_back(kernel);
      (kernel.pass == KernelPass::kForward ? kernels.forward_flops : kernels.backward_flops) += kernel.flops;
    }
  };
  if (embedding) add(transformer_embedding_kernels(model, options.micro_batch, t));
  const auto block = transformer_block_kernels(model, options.micro_batch, t);
  for (std::int64_t layer = 0; layer < layers; ++layer) add(block);
  if (head) add(transformer_head_kernels(model, options.micro_batch, t));
  return kernels;
}

void check(const Comm& world, const ParallelGptOptions& options) {
  const auto fail = [](const std::string& what) { throw InputError("parallel GPT: " + what); };
  if (options.grid.tp < 1 || options.grid.pp < 1 || options.grid.dp < 1) fail("every grid extent must be at least 1");
  if (options.grid.size() != world.size()) {
    fail("a grid of " + std::to_string(options.grid.tp) + " x " + std::to_string(options.grid.pp) + " x " +
         std::to_string(options.grid.dp) + " needs " + std::to_string(options.grid.size()) + " ranks, the world has " +
         std::to_string(world.size()));
  }
  const std::int64_t chunks = static_cast<std::int64_t>(options.grid.pp) * options.virtual_stages;
  if (options.virtual_stages < 1 || options.model.layers % chunks != 0) {
    fail(std::to_string(options.model.layers) + " layers do not split into " + std::to_string(chunks) +
         " equal pipeline chunks");
  }
  if (options.micro_batch < 1 || options.micro_batches < 1 || options.iterations < 1) {
    fail("the micro-batch, the micro-batches and the iterations must be at least 1");
  }
  if (options.zero_stage < 0 || options.zero_stage > 3) fail("the ZeRO stage must be 0, 1, 2 or 3");
}

}  // namespace

void run_parallel_gpt(Comm& world, const ParallelGptOptions& options, const TokenSource& tokens,
                      const ParallelGptHooks& hooks) {
  check(world, options);
  const Grid3d& grid = options.grid;
  const GridCoords coords = grid_coords(grid, world.rank());
  GroupComm tensor(world, tensor_group(grid, world.rank()), group_tag_offset(kTensorBlock));
  GroupComm pipeline(world, pipeline_group(grid, world.rank()), group_tag_offset(kPipelineBlock));
  GroupComm data(world, data_group(grid, world.rank()), group_tag_offset(kDataBlock));

  nn::TensorGroup group;
  if (grid.tp > 1) {
    group.sum = [&tensor](std::span<float> values) {
      allreduce(tensor, floats_of(values), AllreduceAlgorithm::kRing, {Category::kGpuGpuPara, kSumTag});
    };
    group.max = [&tensor](std::span<float> values) { allreduce_max(tensor, values); };
  }
  const int p = grid.pp;
  const int v = options.virtual_stages;
  const int virtual_stages = p * v;
  const std::int64_t layers = options.model.layers / virtual_stages;
  std::vector<nn::GptStage> chunks;
  std::vector<ChunkKernels> kernels;
  for (int chunk = 0; chunk < v; ++chunk) {
    const int j = virtual_stage(coords.pp_index, chunk, p);
    nn::GptShard shard{grid.tp, coords.tp_index, j * layers, layers, j == 0, j == virtual_stages - 1};
    chunks.emplace_back(options.model, shard, options.seed, group);
    kernels.push_back(chunk_kernels(options, layers, shard.embedding, shard.head));
  }
  // Natively the kernels ran inside forward() and backward() and took their time; a simulation charges their priced
  // time here (by shape where the platform's device describes its kernels), after any collectives they called.
  const auto charge = [&world](const std::vector<LayerKernel>& list, double flops) {
    ComputeStep step;
    step.flops = flops;
    step.kernels = list;
    world.compute(step);
  };
  const auto ops =
      pipeline_schedule(options.schedule, p, options.micro_batches, v)[static_cast<std::size_t>(coords.pp_index)];

  // The optimizer's shard of each chunk: all of it, or with ZeRO this rank's part of the data-parallel group's ring.
  std::vector<Shard> shards;
  std::vector<std::vector<float>> first_moments;
  std::vector<std::vector<float>> second_moments;
  for (auto& stage : chunks) {
    const std::size_t count = stage.parameters().size();
    shards.push_back(options.zero_stage >= 1 ? ring_shard(count, grid.dp, coords.dp_index) : Shard{0, count});
    first_moments.emplace_back(shards.back().count, 0.0F);
    second_moments.emplace_back(shards.back().count, 0.0F);
  }
  // ZeRO-3 keeps only its shard of the weights between iterations and gathers the rest before using them.
  const auto drop_others = [&](std::size_t chunk) {
    auto parameters = chunks[chunk].parameters();
    const Shard& own = shards[chunk];
    std::fill(parameters.begin(), parameters.begin() + static_cast<std::ptrdiff_t>(own.offset), 0.0F);
    std::fill(parameters.begin() + static_cast<std::ptrdiff_t>(own.offset + own.count), parameters.end(), 0.0F);
  };
  if (options.zero_stage >= 3) {
    for (std::size_t c = 0; c < chunks.size(); ++c) drop_others(c);
  }

  // The tied word embedding lives on the first and the last virtual stage; their gradients are summed.
  const bool tied = options.model.tied_embeddings && virtual_stages > 1;
  std::unique_ptr<GroupComm> embedding;
  if (tied && p > 1 && (coords.pp_index == 0 || coords.pp_index == p - 1)) {
    GridCoords first = coords;
    first.pp_index = 0;
    GridCoords last = coords;
    last.pp_index = p - 1;
    embedding = std::make_unique<GroupComm>(world, std::vector<int>{grid_rank(grid, first), grid_rank(grid, last)},
                                            group_tag_offset(kEmbeddingBlock));
  }

  const std::int64_t tokens_per = options.micro_batch * options.model.sequence;
  const std::size_t hidden = static_cast<std::size_t>(tokens_per * options.model.hidden);
  const float loss_scale = 1.0F / static_cast<float>(options.micro_batches * grid.dp);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(tokens_per));
  std::vector<std::int32_t> targets(ids.size());
  std::vector<float> incoming(hidden);

  for (std::int64_t iteration = 0; iteration < options.iterations; ++iteration) {
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      chunks[c].zero_gradients();
      if (options.zero_stage >= 3) allgather(data, floats_of(chunks[c].parameters()), {Category::kGpuGpuPara});
    }
    std::deque<std::vector<float>> outgoing;  // kept until the sends complete
    std::vector<RequestPtr> sends;
    const auto send = [&](int to_virtual_stage, Tag tag, std::span<const float> values) {
      outgoing.emplace_back(values.begin(), values.end());
      sends.push_back(pipeline.isend(to_virtual_stage % p, tag, outgoing.back().data(),
                                     outgoing.back().size() * sizeof(float), Category::kGpuGpuPara));
    };
    double loss_sum = 0;
    for (const PipelineOp& op : ops) {
      nn::GptStage& stage = chunks[static_cast<std::size_t>(op.chunk)];
      const int j = virtual_stage(coords.pp_index, op.chunk, p);
      const bool head = j == virtual_stages - 1;
      if (op.kind == PipelineOp::Kind::kForward) {
        if (j == 0 || head) tokens(iteration, coords.dp_index, op.micro_batch, ids, targets);
        const std::span<const std::int32_t> wanted =
            head ? std::span<const std::int32_t>(targets) : std::span<const std::int32_t>();
        std::span<const float> out;
        if (j == 0) {
          out = stage.forward(op.micro_batch, ids, wanted);
        } else {
          pipeline.recv((j - 1) % p, pipeline_tag(op.micro_batch, j - 1, false, virtual_stages), incoming.data(),
                        hidden * sizeof(float), Category::kGpuGpuPara);
          out = stage.forward(op.micro_batch, incoming, wanted);
        }
        charge(kernels[static_cast<std::size_t>(op.chunk)].forward,
               kernels[static_cast<std::size_t>(op.chunk)].forward_flops);
        if (head) {
          loss_sum += out.front();
        } else {
          send(j + 1, pipeline_tag(op.micro_batch, j, false, virtual_stages), out);
        }
      } else {
        std::span<const float> d_output;
        if (!head) {
          pipeline.recv((j + 1) % p, pipeline_tag(op.micro_batch, j + 1, true, virtual_stages), incoming.data(),
                        hidden * sizeof(float), Category::kGpuGpuPara);
          d_output = incoming;
        }
        const auto d_input = stage.backward(op.micro_batch, d_output, loss_scale);
        charge(kernels[static_cast<std::size_t>(op.chunk)].backward,
               kernels[static_cast<std::size_t>(op.chunk)].backward_flops);
        if (j > 0) send(j - 1, pipeline_tag(op.micro_batch, j, true, virtual_stages), d_input);
      }
    }
    for (auto& request : sends) request->wait();

    if (tied) {
      if (p == 1) {
        auto a = chunks.front().tied_embedding_gradients();
        auto b = chunks.back().tied_embedding_gradients();
        for (std::size_t i = 0; i < a.size(); ++i) b[i] = a[i] = a[i] + b[i];
      } else if (embedding) {
        auto& stage = coords.pp_index == 0 ? chunks.front() : chunks.back();
        allreduce(*embedding, floats_of(stage.tied_embedding_gradients()), AllreduceAlgorithm::kRing,
                  {Category::kGpuGpuPara});
      }
    }
    for (auto& stage : chunks) {
      if (options.zero_stage >= 1) {
        reduce_scatter(data, floats_of(stage.gradients()), {Category::kNetwork});
      } else {
        allreduce(data, floats_of(stage.gradients()), AllreduceAlgorithm::kRing, {Category::kNetwork});
      }
    }
    const bool holds_head = coords.pp_index == p - 1;
    double loss = std::numeric_limits<double>::quiet_NaN();
    if (holds_head) {
      float total = static_cast<float>(loss_sum);
      allreduce(data, {&total, 1}, AllreduceAlgorithm::kRing, {Category::kNetwork});
      loss = static_cast<double>(total) / (options.micro_batches * grid.dp);
    }
    const bool last = iteration + 1 == options.iterations;
    if (!last || hooks.step_last) {
      for (std::size_t c = 0; c < chunks.size(); ++c) {
        step_shard(chunks[c], shards[c], first_moments[c], second_moments[c], iteration + 1, options.adamw);
        if (options.zero_stage >= 3) {
          drop_others(c);
        } else if (options.zero_stage >= 1) {
          allgather(data, floats_of(chunks[c].parameters()), {Category::kNetwork});
        }
      }
    }
    if (hooks.on_iteration) hooks.on_iteration({iteration, loss, world.now_s()});
  }
  if (options.zero_stage >= 3) {
    for (auto& stage : chunks) allgather(data, floats_of(stage.parameters()), {Category::kGpuGpuPara});
  }
  if (hooks.on_finish) {
    for (std::size_t c = 0; c < chunks.size(); ++c) hooks.on_finish(static_cast<int>(c), chunks[c]);
  }
}

}  // namespace dsgd::algorithms
