#include "algorithms/pipeline_schedule.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "core/enum_names.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms {

namespace {

constexpr EnumNames<3> kScheduleNames = {"gpipe", "1f1b", "interleaved"};  // PipelineSchedule's order

using Kind = PipelineOp::Kind;

std::vector<PipelineOp> gpipe(int micro_batches) {
  std::vector<PipelineOp> ops;
  for (int mb = 0; mb < micro_batches; ++mb) ops.push_back({Kind::kForward, mb, 0});
  for (int mb = micro_batches; mb-- > 0;) ops.push_back({Kind::kBackward, mb, 0});
  return ops;
}

// Warm-up forwards, the steady state's forward-backward pairs, the cool-down backwards. `op(k, kind)` is the k-th
// op of that kind; both kinds count 0..total-1.
template <typename OpAt>
std::vector<PipelineOp> one_forward_one_backward(int total, int warm_up, const OpAt& op) {
  std::vector<PipelineOp> ops;
  for (int k = 0; k < warm_up; ++k) ops.push_back(op(k, Kind::kForward));
  for (int k = 0; k < total - warm_up; ++k) {
    ops.push_back(op(warm_up + k, Kind::kForward));
    ops.push_back(op(k, Kind::kBackward));
  }
  for (int k = total - warm_up; k < total; ++k) ops.push_back(op(k, Kind::kBackward));
  return ops;
}

}  // namespace

std::string_view to_string(PipelineSchedule schedule) { return name_of(schedule, kScheduleNames); }

PipelineSchedule pipeline_schedule_from_string(std::string_view name) {
  return from_name<PipelineSchedule>("pipeline schedule", name, kScheduleNames);
}

std::vector<std::vector<PipelineOp>> pipeline_schedule(PipelineSchedule schedule, int stages, int micro_batches,
                                                       int chunks) {
  const std::string what = std::string("pipeline schedule '") + std::string(to_string(schedule)) + "': ";
  if (stages < 1) throw InputError(what + "stages must be at least 1, not " + std::to_string(stages));
  if (micro_batches < 1) {
    throw InputError(what + "micro-batches must be at least 1, not " + std::to_string(micro_batches));
  }
  if (chunks < 1) throw InputError(what + "model chunks per rank must be at least 1, not " + std::to_string(chunks));
  if (schedule != PipelineSchedule::kInterleaved && chunks != 1) {
    throw InputError(what + std::to_string(chunks) + " model chunks per rank; only 'interleaved' takes more than 1");
  }
  if (schedule == PipelineSchedule::kInterleaved && micro_batches % stages != 0) {
    throw InputError(what + std::to_string(micro_batches) + " micro-batches is not a multiple of the " +
                     std::to_string(stages) + " stages (Megatron-LM's interleaved schedule needs one)");
  }

  std::vector<std::vector<PipelineOp>> ranks(static_cast<std::size_t>(stages));
  for (int r = 0; r < stages; ++r) {
    auto& ops = ranks[static_cast<std::size_t>(r)];
    switch (schedule) {
      case PipelineSchedule::kGpipe:
        ops = gpipe(micro_batches);
        break;
      case PipelineSchedule::kOneForwardOneBackward:
        // Rank r's first backward needs the p - r - 1 ranks after it to have run their first forward.
        ops = one_forward_one_backward(micro_batches, std::min(stages - r - 1, micro_batches), [](int k, Kind kind) {
          return PipelineOp{kind, k, 0};
        });
        break;
      case PipelineSchedule::kInterleaved: {
        // Groups of p micro-batches go through chunk 0, then chunk 1, ...; backwards visit the chunks in reverse.
        const int total = micro_batches * chunks;
        const int warm_up = std::min((stages - r - 1) * 2 + (chunks - 1) * stages, total);
        ops = one_forward_one_backward(total, warm_up, [stages, chunks](int k, Kind kind) {
          const int chunk_in_order = (k / stages) % chunks;
          const int chunk = kind == Kind::kForward ? chunk_in_order : chunks - 1 - chunk_in_order;
          return PipelineOp{kind, (k / (stages * chunks)) * stages + k % stages, chunk};
        });
        break;
      }
    }
  }
  return ranks;
}

int virtual_stage(int stage, int chunk, int stages) { return chunk * stages + stage; }

int peak_in_flight(const std::vector<PipelineOp>& ops) {
  std::set<std::pair<int, int>> held;  // (micro-batch, chunk) forwarded and not yet backwarded
  std::size_t peak = 0;
  for (const PipelineOp& op : ops) {
    if (op.kind == Kind::kForward) {
      held.insert({op.micro_batch, op.chunk});
      peak = std::max(peak, held.size());
    } else {
      held.erase({op.micro_batch, op.chunk});
    }
  }
  return static_cast<int>(peak);
}

}  // namespace dsgd::algorithms
