#include "core/comm.hpp"

#include <algorithm>
#include <cmath>

#include "core/format.hpp"
#include "core/stopwatch.hpp"

namespace dsgd {

namespace {

// Comm::start_stream's default: the body runs inside join(), after every post.
class SequentialStream final : public Stream, public StreamPosts {
 public:
  SequentialStream(Comm& comm, StreamBody body) : comm_(comm), body_(std::move(body)) {}

  void post() override { ++posted_; }
  void take() override {
    if (taken_ == posted_) {
      throw CommError("rank " + std::to_string(comm_.rank()) + "'s stream took post " + std::to_string(taken_ + 1) +
                      " but its caller made " + std::to_string(posted_) + " before joining it");
    }
    ++taken_;
  }
  StreamResult join(Category /*category: the body charges its own steps*/) override {
    DSGD_ENFORCE(!joined_, "a stream is joined once");
    joined_ = true;
    const Breakdown before = comm_.breakdown();
    const double start_s = comm_.now_s();
    body_(comm_, *this);
    StreamResult result;
    for (std::size_t i = 0; i < before.seconds.size(); ++i) {
      result.stream.seconds[i] = comm_.breakdown().seconds[i] - before.seconds[i];
    }
    result.joined_s = comm_.now_s() - start_s;
    return result;
  }

 private:
  Comm& comm_;
  StreamBody body_;
  std::int64_t posted_ = 0;
  std::int64_t taken_ = 0;
  bool joined_ = false;
};

}  // namespace

StreamPtr Comm::start_stream(StreamBody body) { return std::make_unique<SequentialStream>(*this, std::move(body)); }

void Comm::run_side_by_side(std::span<const std::function<void()>> kernels) {
  for (const auto& kernel : kernels) kernel();
}

std::future<void> Comm::start_beside(std::function<void()> work) {
  return std::async(std::launch::async, std::move(work));
}

void Comm::compute_on_wall_clock(const ComputeStep& step) {
  const Stopwatch watch;
  if (step.kernel) step.kernel();
  charge(step.category, watch.elapsed_s());
}

void Comm::check_peer(int peer, bool any_allowed, std::string_view operation) const {
  if (any_allowed && peer == kAnySource) return;
  if (peer < 0 || peer >= size()) {
    throw CommError("rank " + std::to_string(rank()) + ": " + std::string(operation) + " rank " + std::to_string(peer) +
                    " is out of range [0, " + std::to_string(size()) + ")");
  }
}

int Comm::node_in(const std::vector<int>& nodes, int rank) const {
  check_peer(rank, /*any_allowed=*/false, "node_of");
  return nodes[static_cast<std::size_t>(rank)];
}

std::vector<int> emulated_nodes(const WorldOptions& world) {
  std::vector<int> nodes;
  if (world.ranks_per_node <= 0) return nodes;
  nodes.reserve(static_cast<std::size_t>(std::max(world.size, 0)));
  for (int rank = 0; rank < world.size; ++rank) nodes.push_back(rank / world.ranks_per_node);
  return nodes;
}

void check_world(const WorldOptions& world, std::string_view executor, bool simulated) {
  const std::string prefix = std::string(executor) + " executor: ";
  if (world.size < 1) throw InputError(prefix + "a world needs at least 1 rank, got " + std::to_string(world.size));
  if (!(world.timeout_s > 0) || (!simulated && std::isinf(world.timeout_s))) {
    throw InputError(prefix + "the timeout must be positive" + (simulated ? " (or infinite)" : " and finite") +
                     ", got " + seconds_text(world.timeout_s) + " s");
  }
  if (world.ranks_per_node < 0) {
    throw InputError(prefix + "ranks per node must be >= 0 (0: the executor's own nodes), got " +
                     std::to_string(world.ranks_per_node));
  }
  if (!simulated && !world.payload) {
    throw InputError(prefix + "size-only worlds (payload = false) exist only in simulation");
  }
}

std::string seconds_text(double seconds) { return significant(seconds); }

std::string peer_text(int rank) { return rank == kAnySource ? "any rank" : "rank " + std::to_string(rank); }

std::string size_mismatch_text(int receiver, int source, Tag tag, std::size_t expected, std::size_t actual) {
  return "rank " + std::to_string(receiver) + " expected " + std::to_string(expected) + " bytes from " +
         peer_text(source) + " (tag " + std::to_string(tag) + ") but the message has " + std::to_string(actual) +
         " bytes";
}

std::string waited_text(int rank, double timeout_s, const std::string& what) {
  return "rank " + std::to_string(rank) + " waited " + seconds_text(timeout_s) + " s " + what;
}

std::string awaited_message_text(int source, Tag tag, std::size_t bytes) {
  return "for a message from " + peer_text(source) + " (tag " + std::to_string(tag) + ", " + std::to_string(bytes) +
         " bytes)";
}

std::optional<LossModel> injected_loss(const DatagramOptions& options) {
  if (options.loss_rate <= 0) return std::nullopt;
  return LossModel(options.loss_rate, options.loss_seed);
}

std::shared_ptr<DatagramEndpoint> Comm::datagrams(const DatagramOptions& /*options*/) {
  throw UnavailableError("datagrams: the " + std::string(executor()) +
                         " executor has no unreliable channel yet (threads, mpi and simgrid have; docs/dogwild.md)");
}

}  // namespace dsgd
