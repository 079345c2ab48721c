#include "simulate/transformer_training.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"
#include "simulate/collective_costs.hpp"
#include "simulate/kernel_cost.hpp"
#include "simulate/pipeline_timeline.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

namespace {

constexpr double kHalfBytes = 2;
// Mixed-precision Adam's state per parameter beside the 16-bit weights and gradients: fp32 master weights and the
// two fp32 moments (Rajbhandari et al. 2020, ZeRO, sec. 3.1: K = 12).
constexpr double kOptimizerStateBytes = 12;
// What Megatron-LM's mixed-precision step streams through device memory per parameter: the 16-bit gradient read
// and widened (2 + 4), checked for inf/NaN (4) and its norm taken (4), Adam reading master weight, gradient and
// moments (16) and writing three (12), the master copied back to 16 bits (4 + 2).
constexpr double kAdamStepBytesPerParameter = 48;
// PyTorch DDP's default bucket (bucket_cap_mb = 25): the unit it reduces while the backward pass runs.
constexpr double kDdpBucketBytes = 25.0 * 1024 * 1024;

// Ring reduce-scatter (or all-gather) of `bytes`: half a ring allreduce.
double ring_half_s(const AlphaBetaGamma& link, int ranks, double bytes) {
  if (ranks <= 1) return 0;
  const double p = ranks;
  return (p - 1) * link.latency_s + (p - 1) / p * bytes / link.bandwidth_Bps;
}

double ring_allreduce_s(const AlphaBetaGamma& link, int ranks, double bytes) {
  if (ranks <= 1) return 0;
  return allreduce_time(link, AllreduceAlgorithm::kRing, ranks,
                        static_cast<std::size_t>(std::ceil(bytes / sizeof(float))));
}

struct Links {
  AlphaBetaGamma intra;  // GPU to GPU in a node (NVSwitch)
  AlphaBetaGamma inter;  // GPU to GPU of two nodes, through the GPU's own NIC
  int per_node = 1;
};

Links links_of(const platforms::Platform& platform) {
  Links links;
  links.per_node = std::max(1, platform.nodes.devices_per_node());
  const auto& link = platform.network.link;
  links.inter = {link.latency_s, link.bandwidth_Bps, 0};
  if (platform.nodes.nics && platform.nodes.nics->bandwidth_Bps)
    links.inter.bandwidth_Bps = *platform.nodes.nics->bandwidth_Bps;
  links.intra = links.inter;
  if (platform.nodes.nvswitch)
    links.intra = {platform.nodes.nvswitch->latency_s, platform.nodes.nvswitch->bandwidth_Bps, 0};
  return links;
}

// A group of `ranks` ranks `stride` apart in the rank order (tensor-parallel ranks first, as Megatron-LM places
// them) stays in a node only where its whole span fits one.
const AlphaBetaGamma& group_link(const Links& links, int ranks, int stride) {
  return static_cast<std::int64_t>(ranks) * stride <= links.per_node ? links.intra : links.inter;
}

struct Passes {
  double forward = 0;
  double backward = 0;
  double recompute = 0;
  double streaming = 0;  // of forward and backward: the kernels that are not products
};

bool recomputed_by_selective(const LayerKernel& kernel) {
  for (const char* name : {"attention.scores", "attention.softmax", "attention.dropout", "attention.context"}) {
    if (kernel.layer_name == name) return true;
  }
  return false;
}

Passes priced(const KernelMachine& machine, const std::vector<LayerKernel>& kernels, double resident_bytes,
              Recomputation recomputation) {
  Passes passes;
  for (const LayerKernel& kernel : kernels) {
    const double seconds = kernel_cost(machine, kernel, resident_bytes).seconds;
    if (!kernel.gemm) passes.streaming += seconds;
    if (kernel.pass != KernelPass::kForward) {
      passes.backward += seconds;
      continue;
    }
    passes.forward += seconds;
    if (recomputation == Recomputation::kFull ||
        (recomputation == Recomputation::kSelective && recomputed_by_selective(kernel))) {
      passes.recompute += seconds;
    }
  }
  return passes;
}

void check_layout(const TransformerSpec& model, const ParallelLayout& layout, const platforms::Platform& platform) {
  const auto fail = [&](const std::string& what) {
    throw InputError(model.name + " on " + platform.name + " with " + describe(layout) + ": " + what);
  };
  if (layout.tensor_parallel < 1 || layout.pipeline_parallel < 1 || layout.data_parallel < 1 ||
      layout.virtual_stages < 1) {
    fail("every parallel degree must be at least 1");
  }
  if (layout.micro_batch < 1 || layout.global_batch < 1) fail("the batch and micro-batch must be at least 1");
  if (layout.global_batch % (layout.micro_batch * layout.data_parallel) != 0) {
    fail("the batch of " + std::to_string(layout.global_batch) + " does not split into micro-batches of " +
         std::to_string(layout.micro_batch) + " on " + std::to_string(layout.data_parallel) + " data-parallel ranks");
  }
  const std::int64_t chunks = static_cast<std::int64_t>(layout.pipeline_parallel) * layout.virtual_stages;
  if (model.layers % chunks != 0) {
    fail("its " + std::to_string(model.layers) + " layers do not split into " + std::to_string(chunks) +
         " equal pipeline chunks");
  }
  if (layout.zero_stage < 0 || layout.zero_stage > 3) fail("the ZeRO stage must be 0, 1, 2 or 3");
  const std::int64_t gpus = static_cast<std::int64_t>(platform.nodes.count) * platform.nodes.devices_per_node();
  if (layout.gpus() > gpus) {
    fail("needs " + std::to_string(layout.gpus()) + " GPUs; the platform has " + std::to_string(gpus));
  }
  if (platform.nodes.devices.empty() || !platform.nodes.devices.front().kernels) {
    fail("the platform's devices do not describe how they run kernels (`kernels`, docs/platform-schema.md)");
  }
}

double parameters_of_stage(const TransformerSpec& model, const ParallelLayout& layout, int stage) {
  const double t = layout.tensor_parallel;
  const int p = layout.pipeline_parallel;
  double count = static_cast<double>(model.layers / p) * static_cast<double>(model.layer_parameters()) / t;
  const double words = static_cast<double>(model.vocabulary) * static_cast<double>(model.hidden) / t;
  if (stage == 0) {
    count += words;
    if (model.position == TransformerPosition::kLearned) {
      count += static_cast<double>(model.sequence) * static_cast<double>(model.hidden);
    }
  }
  // The last stage holds the output layer: its own weights, or a copy of the tied embedding on another stage.
  if (stage == p - 1 && (!model.tied_embeddings || p > 1)) count += words;
  return count;
}

int in_flight_of(const std::vector<algorithms::PipelineOp>& ops, int chunk) {
  std::vector<algorithms::PipelineOp> of_chunk;
  for (const auto& op : ops) {
    if (op.chunk == chunk) of_chunk.push_back(op);
  }
  return algorithms::peak_in_flight(of_chunk);
}

std::string gib(double bytes) { return fixed(bytes / (1024.0 * 1024.0 * 1024.0), 1) + " GiB"; }

}  // namespace

std::string describe(const ParallelLayout& layout) {
  std::string text = "tp " + std::to_string(layout.tensor_parallel) + " x pp " +
                     std::to_string(layout.pipeline_parallel) + " x dp " + std::to_string(layout.data_parallel) +
                     ", micro-batch " + std::to_string(layout.micro_batch) + " of " +
                     std::to_string(layout.global_batch) + ", " + std::string(algorithms::to_string(layout.schedule));
  if (layout.virtual_stages > 1) text += " (" + std::to_string(layout.virtual_stages) + " chunks)";
  text += ", " + std::string(to_string(layout.recomputation)) + " recomputation";
  if (layout.zero_stage > 0) text += ", ZeRO-" + std::to_string(layout.zero_stage);
  if (layout.sequence_parallel) text += ", sequence parallel";
  return text;
}

TransformerPrediction predict_transformer(const TransformerSpec& model, const ParallelLayout& layout,
                                          const platforms::Platform& platform, bool check_memory) {
  check_layout(model, layout, platform);
  const auto& device = platform.nodes.devices.front();
  TransformerPrediction prediction;
  prediction.device = device.model;
  prediction.device_memory_bytes = static_cast<double>(platform.nodes.device_memory_bytes());
  const KernelMachine machine = *kernel_machine(device.kernels, device.peak_flops, 1.0, {device.memory});
  const Links links = links_of(platform);
  const int t = layout.tensor_parallel;
  const int p = layout.pipeline_parallel;
  const int v = layout.virtual_stages;
  const int dp = layout.data_parallel;
  const std::int64_t b = layout.micro_batch;
  const int m = static_cast<int>(layout.micro_batches());
  const double layers_per_chunk = static_cast<double>(model.layers / (static_cast<std::int64_t>(p) * v));
  const auto ops = algorithms::pipeline_schedule(layout.schedule, p, m, v);

  // Memory first: it sets the tier the kernels' data lives in, and a stage that does not fit is refused.
  const double block_bytes = block_activation_bytes(model, b, t, layout.recomputation, layout.sequence_parallel);
  const double working_block =
      layout.recomputation == Recomputation::kNone
          ? 0
          : block_activation_bytes(model, b, t, Recomputation::kNone, layout.sequence_parallel);
  const double tokens = static_cast<double>(b * model.sequence);
  const double logits = tokens * std::ceil(static_cast<double>(model.vocabulary) / t) * (kHalfBytes + 4);
  for (int stage = 0; stage < p; ++stage) {
    StageMemory memory;
    memory.stage = stage;
    memory.parameters = parameters_of_stage(model, layout, stage);
    memory.weights = kHalfBytes * memory.parameters / (layout.zero_stage >= 3 ? dp : 1);
    memory.gradients = kHalfBytes * memory.parameters / (layout.zero_stage >= 2 ? dp : 1);
    memory.optimizer = kOptimizerStateBytes * memory.parameters / (layout.zero_stage >= 1 ? dp : 1);
    memory.in_flight = algorithms::peak_in_flight(ops[static_cast<std::size_t>(stage)]);
    memory.activations = memory.in_flight * layers_per_chunk * block_bytes + working_block;
    if (stage == p - 1) memory.activations += in_flight_of(ops[static_cast<std::size_t>(stage)], v - 1) * logits;
    prediction.memory.push_back(memory);
  }
  if (check_memory && prediction.device_memory_bytes > 0) {
    for (const StageMemory& memory : prediction.memory) {
      if (memory.total() <= prediction.device_memory_bytes) continue;
      throw InputError(model.name + " with " + describe(layout) + ": pipeline stage " + std::to_string(memory.stage) +
                       " needs " + gib(memory.total()) + " per GPU (weights " + gib(memory.weights) + ", gradients " +
                       gib(memory.gradients) + ", optimizer " + gib(memory.optimizer) + ", activations " +
                       gib(memory.activations) + " for " + std::to_string(memory.in_flight) +
                       " micro-batch chunks in flight); " + device.model + " has " +
                       gib(prediction.device_memory_bytes));
    }
  }
  const double resident = prediction.memory.front().total();

  // One block on one micro-batch: its kernels, and its tensor-parallel collectives on the hidden state.
  const Passes block =
      priced(machine, transformer_block_kernels(model, b, t, layout.sequence_parallel), resident, layout.recomputation);
  prediction.block_forward_s = block.forward;
  prediction.block_backward_s = block.backward;
  prediction.block_recompute_s = block.recompute;
  prediction.block_streaming_s = block.streaming;
  const AlphaBetaGamma& tp_link = group_link(links, t, 1);
  const double hidden_bytes = kHalfBytes * tokens * static_cast<double>(model.hidden);
  // Two allreduces per pass (attention, MLP); sequence parallelism turns each into a reduce-scatter and an
  // all-gather of the same traffic.
  const double tp_pass = 2 * (layout.sequence_parallel ? 2 * ring_half_s(tp_link, t, hidden_bytes)
                                                       : ring_allreduce_s(tp_link, t, hidden_bytes));
  const double tp_recompute = layout.recomputation == Recomputation::kFull ? tp_pass : 0;
  prediction.tensor_parallel_s = 2 * tp_pass + tp_recompute;
  const Passes head = priced(machine, transformer_head_kernels(model, b, t), resident, Recomputation::kNone);
  const Passes embedding = priced(machine, transformer_embedding_kernels(model, b, t), resident, Recomputation::kNone);
  const double embedding_tp = ring_allreduce_s(tp_link, t, hidden_bytes);  // the vocabulary-parallel lookup's sum

  // ZeRO-3 gathers a chunk's weights before its forward and again before its backward.
  const AlphaBetaGamma& dp_link = group_link(links, dp, t * p);
  const double chunk_weight_bytes = kHalfBytes * layers_per_chunk * static_cast<double>(model.layer_parameters()) / t;
  const double zero3_gather = layout.zero_stage >= 3 ? ring_half_s(dp_link, dp, chunk_weight_bytes) : 0;

  PipelineOpTimes times;
  times.forward_s.assign(static_cast<std::size_t>(p), std::vector<double>(static_cast<std::size_t>(v)));
  times.backward_s = times.forward_s;
  for (int stage = 0; stage < p; ++stage) {
    for (int chunk = 0; chunk < v; ++chunk) {
      const int virtual_stage = algorithms::virtual_stage(stage, chunk, p);
      double forward = layers_per_chunk * (block.forward + tp_pass) + zero3_gather;
      double backward = layers_per_chunk * (block.backward + block.recompute + tp_pass + tp_recompute) + zero3_gather;
      if (virtual_stage == 0) {
        forward += embedding.forward + embedding_tp;
        backward += embedding.backward;
      }
      if (virtual_stage == p * v - 1) {
        forward += head.forward;
        backward += head.backward;
      }
      times.forward_s[static_cast<std::size_t>(stage)][static_cast<std::size_t>(chunk)] = forward;
      times.backward_s[static_cast<std::size_t>(stage)][static_cast<std::size_t>(chunk)] = backward;
    }
  }
  // Megatron-LM's scatter-gather: each tensor-parallel rank sends its 1/t of the activation over its own link, and
  // the receiving stage all-gathers the pieces inside its node.
  const AlphaBetaGamma& pp_link = group_link(links, 2, t);
  prediction.p2p_s = p > 1 ? pp_link.message_s(hidden_bytes / t) + ring_half_s(tp_link, t, hidden_bytes) : 0;
  times.p2p_s = prediction.p2p_s;
  const PipelineTimeline timeline = pipeline_timeline(ops, times);
  prediction.pipeline_s = timeline.makespan_s;
  prediction.bubble_fraction = timeline.bubble_fraction;

  // Data parallelism: every stage's ranks reduce their gradients at once, each over its own rail; the stage
  // with the most parameters sets the time.
  double most_parameters = 0;
  for (const StageMemory& memory : prediction.memory) most_parameters = std::max(most_parameters, memory.parameters);
  const double gradient_bytes = kHalfBytes * most_parameters;
  prediction.data_parallel_s =
      layout.zero_stage >= 3 ? ring_half_s(dp_link, dp, gradient_bytes) : ring_allreduce_s(dp_link, dp, gradient_bytes);
  prediction.data_parallel_exposed_s = prediction.data_parallel_s;
  if (layout.overlap_gradient_reduction && dp > 1) {
    // Buckets become ready evenly through the last micro-batch's backward pass on the first stage.
    double window = 0;
    for (int chunk = 0; chunk < v; ++chunk) window += times.backward_s.front()[static_cast<std::size_t>(chunk)];
    const int buckets = std::max(1, static_cast<int>(std::ceil(gradient_bytes / kDdpBucketBytes)));
    std::vector<double> ready(static_cast<std::size_t>(buckets));
    std::vector<double> cost(static_cast<std::size_t>(buckets), prediction.data_parallel_s / buckets);
    for (int k = 0; k < buckets; ++k) ready[static_cast<std::size_t>(k)] = window * (k + 1) / buckets;
    prediction.data_parallel_exposed_s = pipelined_exposed_s(ready, cost);
  }
  const double stepped = most_parameters / (layout.zero_stage >= 1 ? dp : 1);
  prediction.optimizer_s = kAdamStepBytesPerParameter * stepped / device.memory.bandwidth_Bps;

  prediction.iteration_s = prediction.pipeline_s + prediction.data_parallel_exposed_s + prediction.optimizer_s;
  const double gpus = layout.gpus();
  prediction.model_flops =
      transformer_iteration_flops(model, layout.global_batch, layout.recomputation == Recomputation::kFull);
  prediction.tflops_per_gpu = prediction.model_flops / prediction.iteration_s / gpus * 1e-12;
  prediction.mfu = transformer_iteration_flops(model, layout.global_batch, false) /
                   (prediction.iteration_s * gpus * device.peak_flops);
  return prediction;
}

}  // namespace dsgd::simulate
