#include "simulate/collective_schedule.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"

namespace dsgd::simulate {

namespace {

// What one rank's body did, in order. Compute steps name their kernel class by index into the recorder's table.
struct Op {
  enum class Kind : std::uint8_t { kSend, kRecv, kWait, kCompute };
  Kind kind = Kind::kWait;
  int peer = 0;
  Tag tag = 0;
  int request = 0;  // this rank's request number (kSend, kRecv, kWait)
  std::size_t bytes = 0;
  double flops = 0;
  int kernel_class = 0;
};

// Beyond this many recorded operations the schedule would not fit in memory comfortably (the ring allreduce on
// thousands of ranks is P^2): such a collective is for the message or analytic level, not the flow level.
constexpr std::size_t kMaxRecordedOps = std::size_t{1} << 26;

// What a schedule too large to record leaves the user: the levels that record one and the one that does not.
constexpr std::string_view kTooManyAdvice =
    "too many to record as a schedule, which the flow level replays and the analytic level prices (all but the ring "
    "allreduce); simulate it at the message level";

class Recorder;

class RecordedRequest final : public Request {
 public:
  RecordedRequest(Recorder& recorder, int request, Status status)
      : recorder_(recorder), request_(request), status_(status) {}
  ~RecordedRequest() override {
    if (!waited_ && std::uncaught_exceptions() == 0) wait();
  }
  Status wait() override;

 private:
  Recorder& recorder_;
  int request_;
  Status status_;
  bool waited_ = false;
};

// The recording Comm: one rank's body runs against it and leaves its operations in `ops`.
class Recorder final : public Comm {
 public:
  Recorder(const CollectiveCall& call, int rank, int size, const std::vector<int>& nodes,
           std::vector<std::string>& kernel_classes, std::size_t& total_ops)
      : call_(call), rank_(rank), size_(size), nodes_(nodes), kernel_classes_(kernel_classes), total_ops_(total_ops) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  double now_s() const override { return 0; }
  std::string_view executor() const override { return "schedule recorder"; }
  bool has_payload() const override { return false; }
  int node_of(int rank) const override {
    check_peer(rank, /*any_allowed=*/false, "node_of");
    return nodes_.empty() ? 0 : nodes_[static_cast<std::size_t>(rank)];
  }

  RequestPtr isend(int destination, Tag tag, const void*, std::size_t bytes, Category) override {
    check_peer(destination, /*any_allowed=*/false, "isend to");
    const int request = requests_++;
    push({Op::Kind::kSend, destination, tag, request, bytes, 0, 0});
    return std::make_unique<RecordedRequest>(*this, request, Status{destination, tag, bytes});
  }

  RequestPtr irecv(int source, Tag tag, void*, std::size_t bytes, Category) override {
    check_peer(source, /*any_allowed=*/true, "irecv from");
    if (source == kAnySource) {
      throw UnavailableError(call_.name + " (" + call_.key + ") receives from any source on rank " +
                             std::to_string(rank_) +
                             ": its schedule depends on timing, so it cannot run at flow fidelity");
    }
    const int request = requests_++;
    push({Op::Kind::kRecv, source, tag, request, bytes, 0, 0});
    return std::make_unique<RecordedRequest>(*this, request, Status{source, tag, bytes});
  }

  void compute(const ComputeStep& step) override {
    const auto found = std::find(kernel_classes_.begin(), kernel_classes_.end(), step.kernel_class);
    const auto index = static_cast<int>(found - kernel_classes_.begin());
    if (found == kernel_classes_.end()) kernel_classes_.emplace_back(step.kernel_class);
    push({Op::Kind::kCompute, 0, 0, 0, 0, step.flops, index});
  }

  std::shared_ptr<SharedVector> shared_vector(const std::string& name, std::size_t, std::span<const float>) override {
    throw UnavailableError(call_.name + " (" + call_.key + ") opens shared vector '" + name +
                           "': a collective with shared state cannot run at flow fidelity");
  }

  void wait_for(int request) { push({Op::Kind::kWait, 0, 0, request, 0, 0, 0}); }
  int requests() const { return requests_; }
  std::vector<Op> ops;

 private:
  void push(const Op& op) {
    if (++total_ops_ > kMaxRecordedOps) {
      throw UnavailableError(call_.name + " (" + call_.key + ") on " + std::to_string(size_) + " ranks has more than " +
                             std::to_string(kMaxRecordedOps) +
                             " point-to-point operations: " + std::string(kTooManyAdvice));
    }
    ops.push_back(op);
  }

  const CollectiveCall& call_;
  int rank_;
  int size_;
  const std::vector<int>& nodes_;
  std::vector<std::string>& kernel_classes_;
  std::size_t& total_ops_;
  int requests_ = 0;
};

Status RecordedRequest::wait() {
  if (!waited_) {
    waited_ = true;
    recorder_.wait_for(request_);
  }
  return status_;
}

// One posted, not yet matched side of a transfer.
struct Posted {
  int rank = 0;
  int request = 0;
  int level = 0;
  std::size_t bytes = 0;
  Tag tag = 0;
};

// Posted sides waiting for their match, oldest first. A vector and a read position: collectives post few per
// channel, and a std::deque's first allocation alone would cost more than the whole channel.
struct PostedQueue {
  std::vector<Posted> items;
  std::size_t head = 0;
  bool empty() const { return head == items.size(); }
  const Posted& front() const { return items[head]; }
  void pop_front() { ++head; }
  void push_back(const Posted& posted) { items.push_back(posted); }
};

struct Channel {
  PostedQueue sends;
  PostedQueue receives;
};

// Messages of one (source, destination, tag) match in order, as Comm promises.
struct ChannelKey {
  int source = 0;
  int destination = 0;
  Tag tag = 0;
  bool operator==(const ChannelKey&) const = default;
};

struct ChannelKeyHash {
  std::size_t operator()(const ChannelKey& key) const {
    std::uint64_t h = static_cast<std::uint32_t>(key.source);
    h = h * 0x9E3779B97F4A7C15ULL + static_cast<std::uint32_t>(key.destination);
    h = h * 0x9E3779B97F4A7C15ULL + static_cast<std::uint32_t>(key.tag);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

std::string where(const CollectiveCall& call, int size) {
  return call.name + " (" + call.key + ") on " + std::to_string(size) + " ranks";
}

// A sample of ranks' operations, scaled to all ranks, is about what the whole recording will hold: refused, or
// checked against the memory available, before any rank is kept (a recursive-doubling allreduce on 10 million ranks
// grew to 6 GB before it reached kMaxRecordedOps). Ranks differ (past a power of two, half of them only hand their
// data to a partner), so the sample is spread by a fixed generator, and only an estimate twice over the limit is
// refused early: kMaxRecordedOps stays the bound that decides.
void check_recording(const CollectiveCall& call, int size, const std::function<void(Comm&)>& body,
                     const std::vector<int>& nodes, std::vector<std::string>& kernel_classes) {
  constexpr int kSampled = 64;
  const int sampled = std::min(size, kSampled);
  std::size_t sample_ops = 0;
  std::uint64_t state = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < sampled; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const int rank = size <= kSampled ? i : static_cast<int>((state >> 33) % static_cast<std::uint64_t>(size));
    Recorder probe(call, rank, size, nodes, kernel_classes, sample_ops);
    body(probe);
  }
  const double ops = static_cast<double>(sample_ops) / sampled * size;
  if (ops > 2.0 * static_cast<double>(kMaxRecordedOps)) {
    throw UnavailableError(where(call, size) + " has about " + significant(ops, 3) + " point-to-point operations (" +
                           significant(static_cast<double>(sample_ops) / sampled, 3) +
                           " per rank in a sample), more than " + std::to_string(kMaxRecordedOps) + ": " +
                           std::string(kTooManyAdvice));
  }
  // Per operation: its record, its channel's entry and posted side, its transfer; per rank: its recorder and state.
  constexpr double kPerOp = sizeof(Op) + sizeof(std::pair<const ChannelKey, Channel>) + 2 * sizeof(void*) +
                            sizeof(Posted) + sizeof(ScheduledTransfer);
  constexpr double kPerRank = sizeof(Recorder) + sizeof(std::unique_ptr<Recorder>) + sizeof(std::vector<int>) +
                              sizeof(std::size_t) + 3 * sizeof(int);
  check_available_memory(
      ops * kPerOp + size * kPerRank, where(call, size) + ": recording its schedule needs ",
      " (" + significant(ops, 3) + " operations of " + std::to_string(static_cast<int>(kPerOp)) + " bytes)");
}

}  // namespace

std::size_t CollectiveSchedule::transfer_count() const {
  std::size_t count = 0;
  for (const auto& step : steps) count += step.transfers.size();
  return count;
}

CollectiveSchedule record_schedule(const CollectiveCall& call, int size, const std::function<void(Comm&)>& body,
                                   const std::vector<int>& nodes) {
  DSGD_ENFORCE(size >= 1, "record_schedule needs at least one rank");
  DSGD_ENFORCE(nodes.empty() || nodes.size() == static_cast<std::size_t>(size), "record_schedule's node map size");
  std::vector<std::string> kernel_classes;
  std::size_t total_ops = 0;
  check_recording(call, size, body, nodes, kernel_classes);
  std::vector<std::unique_ptr<Recorder>> ranks;
  ranks.reserve(static_cast<std::size_t>(size));
  for (int rank = 0; rank < size; ++rank) {
    ranks.push_back(std::make_unique<Recorder>(call, rank, size, nodes, kernel_classes, total_ops));
    body(*ranks.back());
  }

  // Replay the recorded operations in "step time": a rank runs until it waits for a request whose transfer is
  // not matched yet; matching a transfer wakes the rank blocked on it.
  CollectiveSchedule schedule;
  const auto step = [&schedule](int index) -> ScheduleStep& {
    if (static_cast<std::size_t>(index) >= schedule.steps.size()) schedule.steps.resize(index + 1);
    return schedule.steps[static_cast<std::size_t>(index)];
  };
  std::vector<std::vector<int>> done_level(ranks.size());  // per rank and request: the step count it needs, or -1
  for (std::size_t r = 0; r < ranks.size(); ++r) done_level[r].assign(ranks[r]->requests(), -1);
  std::vector<std::size_t> next_op(ranks.size(), 0);
  std::vector<int> level(ranks.size(), 0);
  std::vector<int> blocked_on(ranks.size(), -1);
  std::unordered_map<ChannelKey, Channel, ChannelKeyHash> channels;
  channels.reserve(2 * ranks.size());
  std::vector<int> ready;
  for (int rank = size - 1; rank >= 0; --rank) ready.push_back(rank);

  const auto complete = [&](const Posted& side, int needed) {
    done_level[static_cast<std::size_t>(side.rank)][static_cast<std::size_t>(side.request)] = needed;
    if (blocked_on[static_cast<std::size_t>(side.rank)] == side.request) {
      blocked_on[static_cast<std::size_t>(side.rank)] = -1;
      ready.push_back(side.rank);
    }
  };
  const auto match = [&](const Posted& send, const Posted& receive) {
    if (send.bytes != receive.bytes) {
      throw CommError(where(call, size) + ": " +
                      size_mismatch_text(receive.rank, send.rank, send.tag, receive.bytes, send.bytes));
    }
    const int at = std::max(send.level, receive.level);
    step(at).transfers.push_back({send.rank, receive.rank, send.bytes});
    complete(send, at + 1);
    complete(receive, at + 1);
  };

  while (!ready.empty()) {
    const int rank = ready.back();
    ready.pop_back();
    const auto r = static_cast<std::size_t>(rank);
    const auto& ops = ranks[r]->ops;
    while (next_op[r] < ops.size()) {
      const Op& op = ops[next_op[r]];
      if (op.kind == Op::Kind::kWait) {
        const int needed = done_level[r][static_cast<std::size_t>(op.request)];
        if (needed < 0) {
          blocked_on[r] = op.request;
          break;
        }
        level[r] = std::max(level[r], needed);
      } else if (op.kind == Op::Kind::kCompute) {
        step(level[r]).computes.push_back({rank, op.flops, kernel_classes[static_cast<std::size_t>(op.kernel_class)]});
        ++level[r];
      } else {
        const bool sending = op.kind == Op::Kind::kSend;
        const Posted mine{rank, op.request, level[r], op.bytes, op.tag};
        Channel& channel = channels[sending ? ChannelKey{rank, op.peer, op.tag} : ChannelKey{op.peer, rank, op.tag}];
        auto& theirs = sending ? channel.receives : channel.sends;
        if (theirs.empty()) {
          (sending ? channel.sends : channel.receives).push_back(mine);
        } else {
          const Posted other = theirs.front();
          theirs.pop_front();
          sending ? match(mine, other) : match(other, mine);
        }
      }
      ++next_op[r];
    }
  }

  for (int rank = 0; rank < size; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    if (next_op[r] < ranks[r]->ops.size()) {
      throw CommError(where(call, size) + " never completes: rank " + std::to_string(rank) +
                      " waits for a transfer nobody matches");
    }
  }
  for (const auto& [key, channel] : channels) {
    const Posted* left = !channel.sends.empty() ? &channel.sends.front()
                                                : (!channel.receives.empty() ? &channel.receives.front() : nullptr);
    if (left != nullptr) {
      throw CommError(where(call, size) + ": rank " + std::to_string(left->rank) + " posts a " +
                      (!channel.sends.empty() ? "send" : "receive") + " that nobody matches");
    }
  }
  schedule.leave_after = std::move(level);
  return schedule;
}

}  // namespace dsgd::simulate
