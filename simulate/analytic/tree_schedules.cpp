#include "simulate/analytic/tree_schedules.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace dsgd::simulate {

namespace {

constexpr const char* kBroadcast = "broadcast";
constexpr const char* kReduce = "reduce";
// allreduce_call_name(AllreduceAlgorithm::kRecursiveDoubling)
constexpr const char* kRecursiveDoubling = "allreduce recursive_doubling";

// core/collectives.cpp's binomial trees number ranks relative to the root.
struct Tree {
  int size = 0;
  int root = 0;
  std::size_t bytes = 0;
  double flops = 0;  // of one addition of a received buffer
  int absolute(int relative) const { return (relative + root) % size; }
};

// broadcast_messages: a rank receives from its parent (posted at once, at level 0), then sends to its children,
// largest subtree first, each send blocking. A transfer's step is therefore its sender's level: the parent's
// level after receiving, plus the sends before it. `level` is `me`'s level once it holds the data.
void visit_broadcast(const Tree& tree, int me, int level, int first_mask, ScheduleVisitor& visitor) {
  for (int mask = first_mask; mask > 0; mask >>= 1) {
    const int child = me + mask;
    if (child >= tree.size) continue;  // a skipped child costs no step
    visitor.transfer(level, tree.absolute(me), tree.absolute(child), tree.bytes);
    // The child's subtree holds the masks below its lowest set bit, which is `mask`.
    visit_broadcast(tree, child, level + 1, mask >> 1, visitor);
    ++level;
  }
  visitor.leave(tree.absolute(me), level);
}

// reduce_messages: in round k (mask 2^k) a rank whose bit k is set sends its partial sum to me - 2^k and leaves;
// otherwise it receives from me + 2^k, if that rank exists, and adds (a compute step right after the transfer).
// The transfer's step is the later of the two sides' levels when they post it. Returns `me`'s level when it posts
// its send (its rounds below `rounds_below` done); the root reports its own leave.
int visit_reduce(const Tree& tree, int me, int rounds_below, ScheduleVisitor& visitor) {
  int level = 0;
  for (int mask = 1; mask < rounds_below && me + mask < tree.size; mask <<= 1) {
    const int child = me + mask;
    const int child_level = visit_reduce(tree, child, mask, visitor);
    const int step = std::max(level, child_level);
    visitor.transfer(step, tree.absolute(child), tree.absolute(me), tree.bytes);
    visitor.leave(tree.absolute(child), step + 1);  // its send completed: it returns
    visitor.compute(step + 1, tree.absolute(me), tree.flops);
    level = step + 2;
  }
  return level;
}

// allreduce_recursive_doubling with Thakur et al.'s fold: the first 2r ranks (r = P - P', P' = 2^floor(log2 P))
// pair up, even sending to odd (step 0) and odd adding (step 1); the P' active ranks (new rank n: 2n + 1 below r,
// n + r above) then exchange with n ^ 2^k in round k, both directions at once, and add. An exchange's step is the
// later of the two partners' levels, so a rank's level before round k is 2k, plus 2 if its block of 2^k new ranks
// holds a folded one (new ranks below r, the block's lowest new rank below r). Last, each odd folded rank hands the
// result back to its even partner, who has waited at level 1 since its send.
void visit_recursive_doubling(int size, std::size_t bytes, double flops, ScheduleVisitor& visitor) {
  const int active = static_cast<int>(std::bit_floor(static_cast<unsigned>(size)));
  const int excess = size - active;
  const auto real_rank = [excess](int n) { return n < excess ? 2 * n + 1 : n + excess; };
  for (int even = 0; even < 2 * excess; even += 2) {
    visitor.transfer(0, even, even + 1, bytes);
    visitor.compute(1, even + 1, flops);
  }
  int round = 0;
  for (int mask = 1; mask < active; mask <<= 1, ++round) {
    for (int n = 0; n < active; ++n) {
      // The pair's block of 2 * mask new ranks: its lowest is n with the bits up to mask cleared.
      const int block_low = n & ~(2 * mask - 1);
      const int step = 2 * round + (block_low < excess ? 2 : 0);
      visitor.transfer(step, real_rank(n), real_rank(n ^ mask), bytes);
      visitor.compute(step + 1, real_rank(n), flops);
    }
  }
  // After the last round every active rank is at the same level.
  const int final_level = 2 * round + (excess > 0 ? 2 : 0);
  for (int n = 0; n < active; ++n) {
    const int rank = real_rank(n);
    if (n < excess) {
      visitor.transfer(final_level, rank, rank - 1, bytes);
      visitor.leave(rank, final_level + 1);
      visitor.leave(rank - 1, final_level + 1);
    } else {
      visitor.leave(rank, final_level);
    }
  }
}

// The root, from the call's key as core/collectives.cpp's call_of writes it ("count N, root R, tag T"):
// CollectiveCall has no field of its own for it.
int root_of(const CollectiveCall& call) {
  constexpr std::string_view kRoot = "root ";
  const std::size_t at = call.key.find(kRoot);
  if (at == std::string::npos) {
    throw InputError(call.name + " (" + call.key + "): the collective's key names no root (\"root R\")");
  }
  const char* first = call.key.data() + at + kRoot.size();
  const char* last = call.key.data() + call.key.size();
  int root = -1;
  const auto [end, error] = std::from_chars(first, last, root);
  if (error != std::errc{} || (end != last && *end != ',')) {
    throw InputError(call.name + " (" + call.key + "): the root after \"root \" is not a whole number");
  }
  return root;
}

Tree tree_of(const CollectiveCall& call, int size) {
  if (!has_tree_schedule(call)) {
    throw InputError("no enumerated schedule for collective '" + call.name + "' (valid: " + kBroadcast + ", " +
                     kReduce + ", " + kRecursiveDoubling + ")");
  }
  const int root = root_of(call);
  if (size < 1 || root < 0 || root >= size) {
    throw InputError(call.name + " (" + call.key + ") on " + std::to_string(size) + " ranks: the root must be in [0, " +
                     std::to_string(size) + ")");
  }
  return {size, root, call.count * sizeof(float), static_cast<double>(call.count)};
}

}  // namespace

bool has_tree_schedule(const CollectiveCall& call) {
  return call.name == kBroadcast || call.name == kReduce || call.name == kRecursiveDoubling;
}

void visit_tree_schedule(const CollectiveCall& call, int size, ScheduleVisitor& visitor) {
  const Tree tree = tree_of(call, size);
  if (call.name == kRecursiveDoubling) {
    // allreduce() returns before its collective on one rank: nothing to visit (the executor never sees it).
    if (size > 1) visit_recursive_doubling(size, tree.bytes, tree.flops, visitor);
    if (size == 1) visitor.leave(0, 0);
    return;
  }
  if (call.name == kBroadcast) {
    // The root's first child is the largest power of two below the world's size.
    visit_broadcast(tree, 0, 0, static_cast<int>(std::bit_ceil(static_cast<unsigned>(size)) >> 1), visitor);
    return;
  }
  // The root receives in every round: the rounds below the first power of two at or above the size.
  const int rounds_below = static_cast<int>(std::bit_ceil(static_cast<unsigned>(size)));
  visitor.leave(tree.absolute(0), visit_reduce(tree, 0, rounds_below, visitor));
}

CollectiveSchedule streamed_schedule(const CollectiveCall& call, int size) {
  class Collect final : public ScheduleVisitor {
   public:
    explicit Collect(int size) { schedule.leave_after.assign(static_cast<std::size_t>(size), -1); }
    void transfer(int step, int source, int destination, std::size_t bytes) override {
      at(step).transfers.push_back({source, destination, bytes});
    }
    void compute(int step, int rank, double flops) override {
      at(step).computes.push_back({rank, flops, "elementwise"});
    }
    void leave(int rank, int steps) override {
      int& left = schedule.leave_after[static_cast<std::size_t>(rank)];
      DSGD_ENFORCE(left < 0, "rank " + std::to_string(rank) + " leaves twice");
      left = steps;
    }
    CollectiveSchedule schedule;

   private:
    ScheduleStep& at(int step) {
      if (static_cast<std::size_t>(step) >= schedule.steps.size()) schedule.steps.resize(step + 1);
      return schedule.steps[static_cast<std::size_t>(step)];
    }
  };
  Collect collect(size);
  visit_tree_schedule(call, size, collect);
  return std::move(collect.schedule);
}

}  // namespace dsgd::simulate
