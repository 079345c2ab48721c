#pragma once
// One training iteration of a transformer under tensor, pipeline and data parallelism (Megatron-LM's 3-D
// parallelism, ZeRO's sharded data parallelism) on a described GPU platform, priced kernel by kernel and
// collective by collective, with the pipeline's schedule played out op by op (docs/transformers.md "Predicting an
// iteration"). Ranks of one tensor-parallel group and of one data-parallel group do the same work, so one rank per
// pipeline stage stands for all: the representative-rank level (docs/design.md "Fidelity levels").

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/pipeline_schedule.hpp"
#include "core/transformer.hpp"
#include "platforms/platform.hpp"

namespace dsgd::simulate {

struct ParallelLayout {
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int data_parallel = 1;
  std::int64_t micro_batch = 1;   // sequences per micro-batch
  std::int64_t global_batch = 1;  // sequences per iteration, all data-parallel ranks together
  int virtual_stages = 1;         // model chunks per pipeline rank (> 1: the interleaved schedule)
  algorithms::PipelineSchedule schedule = algorithms::PipelineSchedule::kOneForwardOneBackward;
  int zero_stage = 0;  // 0: replicated; 1: optimizer state sharded; 2: + gradients; 3: + weights
  Recomputation recomputation = Recomputation::kFull;
  bool sequence_parallel = false;
  // PyTorch DDP reduces gradient buckets while the backward pass runs; Megatron-LM's own DDP reduces after it.
  bool overlap_gradient_reduction = false;

  int gpus() const { return tensor_parallel * pipeline_parallel * data_parallel; }
  std::int64_t micro_batches() const { return global_batch / (micro_batch * data_parallel); }
};

// What one GPU of a pipeline stage holds, in bytes.
struct StageMemory {
  int stage = 0;
  double parameters = 0;  // the stage's share on one tensor-parallel rank (a count, not bytes)
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;    // fp32 master weights and Adam's two moments
  double activations = 0;  // kept for the backward pass, micro-batches in flight, plus one block recomputed
  int in_flight = 0;       // micro-batch chunks whose activations are held at once
  double total() const { return weights + gradients + optimizer + activations; }
};

struct TransformerPrediction {
  double iteration_s = 0;
  double model_flops = 0;      // per iteration, Megatron-LM's count (recomputation included where it runs)
  double tflops_per_gpu = 0;   // model_flops / iteration / GPUs, in 1e12
  double mfu = 0;              // the FLOPs without recomputation against the devices' peak
  double block_forward_s = 0;  // one block, one micro-batch, its kernels only
  double block_backward_s = 0;
  double block_recompute_s = 0;
  double block_streaming_s = 0;  // of the forward and backward: norms, softmax, dropouts, activations, residuals
  double tensor_parallel_s = 0;  // one block's collectives, forward, recomputation and backward together
  double p2p_s = 0;              // one activation between two pipeline stages
  double pipeline_s = 0;         // the schedule's makespan
  double bubble_fraction = 0;
  double data_parallel_s = 0;          // the gradient reduction (and ZeRO's gathers), whole
  double data_parallel_exposed_s = 0;  // the part not hidden behind the backward pass
  double optimizer_s = 0;
  std::vector<StageMemory> memory;  // per stage, first to last
  double device_memory_bytes = 0;   // the smallest device's; 0 where the platform does not say
  std::string device;
};

// Throws InputError naming what is wrong: a layout whose GPUs the platform does not have, a batch that does not
// split into micro-batches, layers that do not split into stages and chunks, a device without a kernel model, and
// (with check_memory) a stage that needs more memory than its device has, with the estimate and the limit.
TransformerPrediction predict_transformer(const TransformerSpec& model, const ParallelLayout& layout,
                                          const platforms::Platform& platform, bool check_memory = true);

// "tp 8 x pp 64 x dp 6, micro-batch 1, 1f1b, full recomputation" for messages and tables.
std::string describe(const ParallelLayout& layout);

}  // namespace dsgd::simulate
