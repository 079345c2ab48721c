#include "simulate/pipeline_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace dsgd::simulate {

namespace {

using algorithms::PipelineOp;
using Kind = PipelineOp::Kind;

constexpr double kNotRun = std::numeric_limits<double>::quiet_NaN();

// The ops of one iteration indexed densely: (micro-batch index, virtual stage, kind), where the micro-batches are
// those the ops name, in increasing order.
class OpIndex {
 public:
  OpIndex(std::vector<int> micro_batches, int stages, int chunks)
      : micro_batches_(std::move(micro_batches)), stages_(stages), virtual_stages_(stages * chunks) {}

  std::size_t size() const { return micro_batches_.size() * static_cast<std::size_t>(virtual_stages_) * 2; }
  int virtual_stages() const { return virtual_stages_; }
  std::size_t of(Kind kind, int micro_batch, int virtual_stage) const {
    const auto b = static_cast<std::size_t>(
        std::lower_bound(micro_batches_.begin(), micro_batches_.end(), micro_batch) - micro_batches_.begin());
    return (b * static_cast<std::size_t>(virtual_stages_) + static_cast<std::size_t>(virtual_stage)) * 2 +
           (kind == Kind::kBackward ? 1 : 0);
  }
  Kind kind(std::size_t key) const { return key % 2 == 1 ? Kind::kBackward : Kind::kForward; }
  int micro_batch(std::size_t key) const { return micro_batches_[key / 2 / virtual_stages()]; }
  int virtual_stage(std::size_t key) const { return static_cast<int>(key / 2 % virtual_stages()); }
  int rank(std::size_t key) const { return virtual_stage(key) % stages_; }

  // "the backward of micro-batch 3 on rank 1's chunk 0 (virtual stage 1)"
  std::string describe(std::size_t key) const {
    const int j = virtual_stage(key);
    return std::string(kind(key) == Kind::kForward ? "the forward" : "the backward") + " of micro-batch " +
           std::to_string(micro_batch(key)) + " on rank " + std::to_string(j % stages_) + "'s chunk " +
           std::to_string(j / stages_) + " (virtual stage " + std::to_string(j) + ")";
  }

  // The op `key` waits for; size() for the first virtual stage's forward, which waits for nothing.
  std::size_t dependency(std::size_t key) const {
    const int j = virtual_stage(key);
    const int b = micro_batch(key);
    if (kind(key) == Kind::kForward) return j == 0 ? size() : of(Kind::kForward, b, j - 1);
    return j == virtual_stages_ - 1 ? of(Kind::kForward, b, j) : of(Kind::kBackward, b, j + 1);
  }

 private:
  std::vector<int> micro_batches_;
  int stages_;
  int virtual_stages_;
};

void check_times(const PipelineOpTimes& times, int stages) {
  const auto fail = [](const std::string& text) { throw InputError("pipeline op times: " + text); };
  if (times.forward_s.size() != static_cast<std::size_t>(stages) ||
      times.backward_s.size() != static_cast<std::size_t>(stages)) {
    fail("forward and backward times for " + std::to_string(times.forward_s.size()) + " and " +
         std::to_string(times.backward_s.size()) + " stages, not the schedule's " + std::to_string(stages));
  }
  const std::size_t chunks = times.forward_s[0].size();
  if (chunks == 0) fail("no model chunk on stage 0");
  const auto valid = [](double seconds) { return std::isfinite(seconds) && seconds >= 0; };
  for (int r = 0; r < stages; ++r) {
    const auto& forward = times.forward_s[static_cast<std::size_t>(r)];
    const auto& backward = times.backward_s[static_cast<std::size_t>(r)];
    if (forward.size() != chunks || backward.size() != chunks) {
      fail("stage " + std::to_string(r) + " has " + std::to_string(forward.size()) + " forward and " +
           std::to_string(backward.size()) + " backward times, not stage 0's " + std::to_string(chunks) + " chunks");
    }
    for (std::size_t c = 0; c < chunks; ++c) {
      if (!valid(forward[c]) || !valid(backward[c])) {
        fail("stage " + std::to_string(r) + " chunk " + std::to_string(c) + ": forward " + std::to_string(forward[c]) +
             " s, backward " + std::to_string(backward[c]) + " s; times must be finite and >= 0");
      }
    }
  }
  if (!valid(times.p2p_s)) fail("p2p_s " + std::to_string(times.p2p_s) + " must be finite and >= 0");
}

}  // namespace

PipelineTimeline pipeline_timeline(const std::vector<std::vector<PipelineOp>>& ops, const PipelineOpTimes& times) {
  if (ops.empty()) throw InputError("pipeline timeline: a schedule of no ranks");
  const int stages = static_cast<int>(ops.size());
  check_times(times, stages);
  const int chunks = static_cast<int>(times.forward_s[0].size());

  // The micro-batches the ops name, and each op's key.
  std::vector<int> micro_batches;
  for (int r = 0; r < stages; ++r) {
    for (std::size_t i = 0; i < ops[static_cast<std::size_t>(r)].size(); ++i) {
      const PipelineOp& op = ops[static_cast<std::size_t>(r)][i];
      if (op.micro_batch < 0 || op.chunk < 0 || op.chunk >= chunks) {
        throw InputError("pipeline timeline: rank " + std::to_string(r) + "'s op " + std::to_string(i) +
                         " names micro-batch " + std::to_string(op.micro_batch) + " on chunk " +
                         std::to_string(op.chunk) + "; micro-batches are >= 0 and chunks 0.." +
                         std::to_string(chunks - 1));
      }
      micro_batches.push_back(op.micro_batch);
    }
  }
  std::sort(micro_batches.begin(), micro_batches.end());
  micro_batches.erase(std::unique(micro_batches.begin(), micro_batches.end()), micro_batches.end());
  const OpIndex index(std::move(micro_batches), stages, chunks);

  std::vector<std::vector<std::size_t>> keys(ops.size());
  std::vector<char> scheduled(index.size(), 0);
  for (int r = 0; r < stages; ++r) {
    for (const PipelineOp& op : ops[static_cast<std::size_t>(r)]) {
      const std::size_t key = index.of(op.kind, op.micro_batch, algorithms::virtual_stage(r, op.chunk, stages));
      if (scheduled[key]) {
        throw InputError("pipeline timeline: rank " + std::to_string(r) + " runs twice " + index.describe(key));
      }
      scheduled[key] = 1;
      keys[static_cast<std::size_t>(r)].push_back(key);
    }
  }
  // A micro-batch goes forward through every virtual stage and back: an op missing anywhere stalls it.
  for (std::size_t key = 0; key < index.size(); ++key) {
    if (!scheduled[key]) {
      throw InputError("pipeline timeline: rank " + std::to_string(index.rank(key)) + " never runs " +
                       index.describe(key) + ", which micro-batch " + std::to_string(index.micro_batch(key)) +
                       " needs");
    }
  }

  // List scheduling: run each rank's ops in order while their inputs are there; an op whose input is not there yet
  // parks its rank on that input's key, and the input's end wakes it.
  std::vector<double> end_s(index.size(), kNotRun);
  std::vector<int> waiter(index.size(), -1);
  std::vector<std::size_t> next(ops.size(), 0);
  std::vector<double> free_s(ops.size(), 0);
  PipelineTimeline timeline;
  timeline.busy_s.assign(ops.size(), 0);
  double first_start_s = std::numeric_limits<double>::infinity();
  std::vector<int> runnable;
  for (int r = stages; r-- > 0;) runnable.push_back(r);
  while (!runnable.empty()) {
    const int r = runnable.back();
    runnable.pop_back();
    const auto rank = static_cast<std::size_t>(r);
    for (; next[rank] < keys[rank].size(); ++next[rank]) {
      const std::size_t key = keys[rank][next[rank]];
      const std::size_t dependency = index.dependency(key);
      double ready_s = free_s[rank];
      if (dependency != index.size()) {
        if (std::isnan(end_s[dependency])) {
          waiter[dependency] = r;
          break;
        }
        const double p2p_s = index.rank(dependency) == r ? 0 : times.p2p_s;
        ready_s = std::max(ready_s, end_s[dependency] + p2p_s);
      }
      const int chunk = index.virtual_stage(key) / stages;
      const auto& op_times = index.kind(key) == Kind::kForward ? times.forward_s : times.backward_s;
      const double op_s = op_times[rank][static_cast<std::size_t>(chunk)];
      first_start_s = std::min(first_start_s, ready_s);
      end_s[key] = ready_s + op_s;
      free_s[rank] = end_s[key];
      timeline.busy_s[rank] += op_s;
      if (waiter[key] >= 0) {
        runnable.push_back(waiter[key]);
        waiter[key] = -1;
      }
    }
  }

  // Every op is scheduled somewhere, so a rank left behind waits for another that waits in turn. Follow the waits
  // from the first such rank until they come round, and report a rank on that cycle: one that waits for an op later
  // on its own list, or for a rank whose next op needs its later ones.
  for (int first = 0; first < stages; ++first) {
    if (next[static_cast<std::size_t>(first)] == keys[static_cast<std::size_t>(first)].size()) continue;
    std::vector<char> visited(ops.size(), 0);
    int r = first;
    while (!visited[static_cast<std::size_t>(r)]) {
      visited[static_cast<std::size_t>(r)] = 1;
      const auto rank = static_cast<std::size_t>(r);
      r = index.rank(index.dependency(keys[rank][next[rank]]));
    }
    const auto rank = static_cast<std::size_t>(r);
    const std::size_t key = keys[rank][next[rank]];
    const std::size_t dependency = index.dependency(key);
    const int other = index.rank(dependency);
    const auto& other_keys = keys[static_cast<std::size_t>(other)];
    const std::size_t other_next = next[static_cast<std::size_t>(other)];
    std::string why = other == r ? "which comes later on rank " + std::to_string(r)
                                 : "which rank " + std::to_string(other) + " cannot reach: it waits at its op " +
                                       std::to_string(other_next) + ", " + index.describe(other_keys[other_next]);
    throw InputError("pipeline timeline: the schedule cannot proceed: rank " + std::to_string(r) + "'s op " +
                     std::to_string(next[rank]) + ", " + index.describe(key) + ", waits for " +
                     index.describe(dependency) + ", " + why);
  }

  double last_end_s = 0;
  for (double s : free_s) last_end_s = std::max(last_end_s, s);
  timeline.makespan_s = std::isfinite(first_start_s) ? last_end_s - first_start_s : 0;
  double busiest_s = 0;
  for (double s : timeline.busy_s) {
    timeline.idle_s.push_back(timeline.makespan_s - s);
    busiest_s = std::max(busiest_s, s);
  }
  timeline.bubble_fraction = busiest_s > 0 ? (timeline.makespan_s - busiest_s) / busiest_s : 0;
  return timeline;
}

}  // namespace dsgd::simulate
