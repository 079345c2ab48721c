#pragma once
// Pipeline-parallel schedules (Narayanan et al., SC'21, Megatron-LM): `stages` ranks each hold a contiguous part
// of the model's layers, an iteration's batch is split into `micro_batches`, and each rank runs the forward and the
// backward of every micro-batch on its part. A schedule is the order in which each rank runs them; how long an
// iteration takes under one is simulate/pipeline_timeline.hpp's job. Bubbles and peak activations per schedule
// are tabulated in algorithms/README.md "Pipeline schedules".

#include <array>
#include <string_view>
#include <vector>

namespace dsgd::algorithms {

enum class PipelineSchedule {
  kGpipe,                  // every forward, then every backward (Huang et al., GPipe)
  kOneForwardOneBackward,  // 1F1B, PipeDream-Flush: a few warm-up forwards, then one forward, one backward
  kInterleaved,            // 1F1B over several model chunks per rank (Megatron-LM's virtual pipeline stages)
};
inline constexpr std::array<PipelineSchedule, 3> kPipelineSchedules = {
    PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward, PipelineSchedule::kInterleaved};
// "gpipe", "1f1b", "interleaved".
std::string_view to_string(PipelineSchedule schedule);
// Parses those names; UnknownNameError lists them.
PipelineSchedule pipeline_schedule_from_string(std::string_view name);

// One step of a rank: the forward or the backward of micro-batch `micro_batch` on the rank's model chunk `chunk`.
struct PipelineOp {
  enum class Kind { kForward, kBackward };
  Kind kind = Kind::kForward;
  int micro_batch = 0;
  int chunk = 0;
  bool operator==(const PipelineOp&) const = default;
};

// The ops each of `stages` ranks runs, in order, for one iteration of `micro_batches`, with `chunks` model chunks
// per rank (1 except for kInterleaved; the model's layers are split over chunks * stages virtual stages, see
// virtual_stage). Every rank runs the forward and the backward of every (micro-batch, chunk) once, each forward
// before its backward:
//  * kGpipe: forwards 0..m-1, then backwards m-1..0 (last in, first out, as autograd over the whole batch would).
//    With uniform op times the backward order does not change the makespan: m + p - 1 forward-backward slots.
//  * kOneForwardOneBackward: min(p - r - 1, m) warm-up forwards on rank r, then alternately one forward and one
//    backward, then the remaining backwards; micro-batches in order 0..m-1 in both directions.
//  * kInterleaved: Megatron-LM's forward_backward_pipelining_with_interleaving with micro-batch groups of p:
//    (p - r - 1) * 2 + (v - 1) * p warm-up forwards (at most m * v), then alternately one forward and one
//    backward, then the remaining backwards. The k-th forward runs chunk (k / p) % v on micro-batch
//    (k / (p v)) p + k % p; the k-th backward the same micro-batch on chunk v - 1 - (k / p) % v.
// Throws InputError for stages, micro_batches or chunks < 1, chunks > 1 outside kInterleaved, and kInterleaved with
// micro_batches not a multiple of stages (Megatron-LM refuses that too).
std::vector<std::vector<PipelineOp>> pipeline_schedule(PipelineSchedule schedule, int stages, int micro_batches,
                                                       int chunks);

// The virtual stage (the place in the model's order of layer groups) of model chunk `chunk` on rank `stage` of
// `stages`: chunk * stages + stage, so consecutive virtual stages sit on consecutive ranks.
int virtual_stage(int stage, int chunk, int stages);

// The most (micro-batch, chunk) pairs whose forward has run and whose backward has not yet, over the rank's `ops`
// in order: the activations the rank holds at once. 1F1B: min(p - r, m) on rank r; GPipe: m.
int peak_in_flight(const std::vector<PipelineOp>& ops);

}  // namespace dsgd::algorithms
