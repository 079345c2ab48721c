#pragma once
// Training a GPT with tensor, pipeline and data parallelism (Megatron-LM's 3-D parallelism) and sharded data
// parallelism (ZeRO 1-3), written once against the comm interface, so it runs on threads, on MPI and in SimGrid
// (docs/transformers.md "Training natively"). The world is a grid of tp x pp x dp ranks in Megatron-LM's order
// (core/group_comm.hpp): each rank holds one tensor-parallel shard of the model chunks of its pipeline stage
// (core/nn/gpt.hpp), runs its stage's ops of the pipeline schedule (algorithms/pipeline_schedule.hpp), passes
// hidden states and their gradients to the neighbouring stages, reduces inside its tensor-parallel group where
// Megatron-LM does, and reduces gradients over its data-parallel group before an AdamW step.
//
// Deterministic: the same seed gives the same bits on every executor (every sum has a fixed order), and the
// gradient a grid computes equals the one-rank gradient of the same batch within rounding.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "algorithms/pipeline_schedule.hpp"
#include "core/comm.hpp"
#include "core/group_comm.hpp"
#include "core/nn/gpt.hpp"

namespace dsgd::algorithms {

struct ParallelGptOptions {
  TransformerSpec model;
  Grid3d grid;
  std::int64_t micro_batch = 1;  // sequences per micro-batch
  int micro_batches = 1;         // per data-parallel replica and iteration
  PipelineSchedule schedule = PipelineSchedule::kOneForwardOneBackward;
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved)
  int zero_stage = 0;      // 0: replicated optimizer; 1-3: sharded over the data-parallel group
  nn::AdamWOptions adamw;
  std::uint64_t seed = 1;
  std::int64_t iterations = 1;
};

// Fills the token ids and the targets (the next tokens) of micro-batch `micro_batch` of replica `replica` in
// iteration `iteration`, micro_batch x sequence tokens each. Every rank that asks gets the same tokens.
using TokenSource = std::function<void(std::int64_t iteration, int replica, int micro_batch,
                                       std::span<std::int32_t> ids, std::span<std::int32_t> targets)>;

// What a rank reports after each iteration: the mean loss over the iteration's micro-batches and replicas (on the
// ranks holding the last stage; NaN elsewhere) and the seconds since the world started.
struct ParallelGptProgress {
  std::int64_t iteration = 0;
  double loss = 0;
  double time_s = 0;
};

struct ParallelGptHooks {
  // Called on every rank after each iteration's step.
  std::function<void(const ParallelGptProgress&)> on_iteration;
  // Called on every rank at the end with each of its chunks, after the last iteration's gradients were reduced over
  // the data-parallel group (before the step when `step_last` is false): for tests and checkpoints.
  std::function<void(int chunk, nn::GptStage& stage)> on_finish;
  bool step_last = true;
};

// This rank's part of the run. Throws InputError for a grid that does not match the world, layers that do not
// split into stages and chunks, or a schedule the pipeline cannot run (pipeline_schedule's errors).
void run_parallel_gpt(Comm& world, const ParallelGptOptions& options, const TokenSource& tokens,
                      const ParallelGptHooks& hooks = {});

}  // namespace dsgd::algorithms
