#pragma once
// How long one iteration of a pipeline-parallel schedule (algorithms/pipeline_schedule.hpp) takes, event by event:
// each rank runs its ops one at a time in its list's order, and an op starts once its rank is free and its input
// has arrived from the neighbouring virtual stage. No engine: a list scheduler over the ops, O(ops).

#include <vector>

#include "algorithms/pipeline_schedule.hpp"

namespace dsgd::simulate {

struct PipelineOpTimes {
  // [stage][chunk]: seconds of one micro-batch's forward and backward on that rank's model chunk. Every rank has
  // the same number of chunks, which is the model's: an op on another chunk is refused.
  std::vector<std::vector<double>> forward_s, backward_s;
  double p2p_s = 0;  // one activation (or its gradient) sent from one virtual stage to the next, on another rank
};

struct PipelineTimeline {
  double makespan_s = 0;       // first op's start to the last op's end, over all ranks
  std::vector<double> busy_s;  // per rank: the sum of its ops' times
  std::vector<double> idle_s;  // per rank: makespan - busy
  // (makespan - the busiest rank's busy time) / that busy time: Megatron-LM's bubble fraction, (p - 1) / m for
  // 1F1B with uniform op times. 0 when no rank is busy.
  double bubble_fraction = 0;
};

// The timeline of `ops` (ops[r]: rank r's ops in order, as pipeline_schedule returns them) under `times`. Op
// (micro-batch b, chunk c) on rank r works at virtual stage j = c * p + r of V = chunks * p, and waits for:
//  * a forward: the forward of b at j - 1 (none at j = 0);
//  * a backward: the backward of b at j + 1, or at the last virtual stage the forward of b there;
// plus p2p_s when that op ran on another rank (consecutive virtual stages share a rank only when p = 1).
// Throws InputError when `times` does not give every rank the same chunks with finite times >= 0, when an op
// names a negative micro-batch or a chunk outside times, when a rank runs an op twice, when an op waits for one
// that comes later on its own rank or in a cycle (naming the rank, the op and what it waits for), or when a
// micro-batch some op names misses an op at some virtual stage.
PipelineTimeline pipeline_timeline(const std::vector<std::vector<algorithms::PipelineOp>>& ops,
                                   const PipelineOpTimes& times);

}  // namespace dsgd::simulate
