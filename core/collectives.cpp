#include "core/collectives.hpp"

#include <algorithm>
#include <bit>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/group_comm.hpp"

namespace dsgd {

namespace {

// A float buffer that exists only when the comm carries payloads. Left uninitialised: every use writes it before
// reading it, and zero-filling a full-size buffer per call cost up to 20% of a large allreduce.
class Scratch {
 public:
  Scratch(const Comm& comm, std::size_t count) : count_(count) {
    if (comm.has_payload() && count > 0) storage_.reset(new float[count]);
  }
  Floats floats() { return {storage_.get(), count_}; }

 private:
  std::size_t count_;
  std::unique_ptr<float[]> storage_;
};

Floats slice(Floats buffer, std::size_t offset, std::size_t count) {
  return {buffer.data ? buffer.data + offset : nullptr, count};
}

void send(Comm& comm, int peer, Floats what, const CollectiveOptions& options) {
  comm.send(peer, options.tag, what.data, what.bytes(), options.category);
}

void recv(Comm& comm, int peer, Floats into, const CollectiveOptions& options) {
  comm.recv(peer, options.tag, into.data, into.bytes(), options.category);
}

// Sends `out` to and receives `in` from `peer` at once (both posted before either waits, so pairs cannot
// deadlock however the executor buffers).
void exchange(Comm& comm, int peer, Floats out, Floats in, const CollectiveOptions& options) {
  auto receive = comm.irecv(peer, options.tag, in.data, in.bytes(), options.category);
  auto sending = comm.isend(peer, options.tag, out.data, out.bytes(), options.category);
  receive->wait();
  sending->wait();
}

// target += source, as a compute step charged to the collective's category.
void accumulate(Comm& comm, Floats target, Floats source, const CollectiveOptions& options) {
  ComputeStep step;
  step.flops = static_cast<double>(target.count);
  step.kernel_class = "elementwise";
  step.category = options.category;
  step.rank_local = true;  // both buffers are the calling rank's
  if (target.data && source.data) {
    step.kernel = [target, source] {
      float* __restrict out = target.data;
      const float* __restrict in = source.data;
      // GCC -O2 leaves this loop scalar; the pragma (with -fopenmp-simd) vectorises it.
#pragma omp simd
      for (std::size_t i = 0; i < target.count; ++i) out[i] += in[i];
    };
  }
  comm.compute(step);
}

void copy(Floats target, Floats source) {
  if (target.data && source.data) std::copy_n(source.data, source.count, target.data);
}

// Rank order relative to the root, for the binomial trees.
int relative(int rank, int root, int size) { return (rank - root + size) % size; }
int absolute(int relative_rank, int root, int size) { return (relative_rank + root) % size; }

// Thakur et al.'s treatment of a non-power-of-two world for recursive doubling and Rabenseifner: with
// P' = 2^floor(log2 P) and r = P - P', the first 2r ranks pair up (even sends to odd, odd reduces), leaving P'
// active ranks numbered 0..P'-1. Returns this rank's number among them, or -1 if it sat out.
struct Fold {
  int active = 0;     // P'
  int excess = 0;     // r
  int new_rank = -1;  // among the active ranks, or -1
  int real_rank(int new_rank_of_peer) const {
    return new_rank_of_peer < excess ? 2 * new_rank_of_peer + 1 : new_rank_of_peer + excess;
  }
};

Fold fold_in(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  const int rank = comm.rank();
  Fold fold;
  fold.active = static_cast<int>(std::bit_floor(static_cast<unsigned>(comm.size())));
  fold.excess = comm.size() - fold.active;
  if (rank < 2 * fold.excess) {
    if (rank % 2 == 0) {
      send(comm, rank + 1, buffer, options);
    } else {
      Scratch incoming(comm, buffer.count);
      recv(comm, rank - 1, incoming.floats(), options);
      accumulate(comm, buffer, incoming.floats(), options);
      fold.new_rank = rank / 2;
    }
  } else {
    fold.new_rank = rank - fold.excess;
  }
  return fold;
}

// The ranks that sat out get the result from their partner.
void fold_out(Comm& comm, Floats buffer, const Fold& fold, const CollectiveOptions& options) {
  const int rank = comm.rank();
  if (rank >= 2 * fold.excess) return;
  if (rank % 2 == 0) {
    recv(comm, rank + 1, buffer, options);
  } else {
    send(comm, rank - 1, buffer, options);
  }
}

void allreduce_recursive_doubling(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  const Fold fold = fold_in(comm, buffer, options);
  if (fold.new_rank >= 0) {
    Scratch incoming(comm, buffer.count);
    for (int mask = 1; mask < fold.active; mask <<= 1) {
      const int peer = fold.real_rank(fold.new_rank ^ mask);
      exchange(comm, peer, buffer, incoming.floats(), options);
      accumulate(comm, buffer, incoming.floats(), options);
    }
  }
  fold_out(comm, buffer, fold, options);
}

// Rabenseifner: reduce-scatter by recursive halving, then allgather by recursive doubling.
void allreduce_rabenseifner(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  const Fold fold = fold_in(comm, buffer, options);
  if (fold.new_rank >= 0) {
    struct Range {
      std::size_t begin, end;
    };
    std::vector<Range> history;  // the range held before each halving step
    Range mine{0, buffer.count};
    Scratch incoming(comm, buffer.count);
    for (int mask = fold.active / 2; mask >= 1; mask /= 2) {
      const int peer = fold.real_rank(fold.new_rank ^ mask);
      const std::size_t middle = mine.begin + (mine.end - mine.begin) / 2;
      const bool keep_lower = (fold.new_rank & mask) == 0;
      const Range keep = keep_lower ? Range{mine.begin, middle} : Range{middle, mine.end};
      const Range give = keep_lower ? Range{middle, mine.end} : Range{mine.begin, middle};
      history.push_back(mine);
      exchange(comm, peer, slice(buffer, give.begin, give.end - give.begin),
               slice(incoming.floats(), 0, keep.end - keep.begin), options);
      accumulate(comm, slice(buffer, keep.begin, keep.end - keep.begin),
                 slice(incoming.floats(), 0, keep.end - keep.begin), options);
      mine = keep;
    }
    for (int mask = 1; mask < fold.active; mask <<= 1) {
      const int peer = fold.real_rank(fold.new_rank ^ mask);
      const Range whole = history.back();
      history.pop_back();
      const Range theirs = mine.begin == whole.begin ? Range{mine.end, whole.end} : Range{whole.begin, mine.begin};
      exchange(comm, peer, slice(buffer, mine.begin, mine.end - mine.begin),
               slice(buffer, theirs.begin, theirs.end - theirs.begin), options);
      mine = whole;
    }
  }
  fold_out(comm, buffer, fold, options);
}

// Ring: P-1 reduce-scatter steps and P-1 allgather steps, each moving one of P nearly equal chunks.
Floats ring_chunk(Floats buffer, int size, int index) {
  const auto begin = [&](int chunk) {
    return buffer.count * static_cast<std::size_t>(chunk) / static_cast<std::size_t>(size);
  };
  const int c = ((index % size) + size) % size;
  return slice(buffer, begin(c), begin(c + 1) - begin(c));
}

// After it, rank r holds chunk r + 1 summed over all ranks.
void ring_reduce_scatter(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  const int size = comm.size();
  if (size == 1) return;
  const int rank = comm.rank();
  const int right = (rank + 1) % size;
  const int left = (rank - 1 + size) % size;
  Scratch incoming(comm, buffer.count / static_cast<std::size_t>(size) + 1);
  for (int step = 0; step < size - 1; ++step) {
    const Floats out = ring_chunk(buffer, size, rank - step);
    const Floats in = ring_chunk(buffer, size, rank - step - 1);
    auto receive = comm.irecv(left, options.tag, incoming.floats().data, in.bytes(), options.category);
    auto sending = comm.isend(right, options.tag, out.data, out.bytes(), options.category);
    receive->wait();
    sending->wait();
    accumulate(comm, in, slice(incoming.floats(), 0, in.count), options);
  }
}

// From rank r holding chunk r + 1 to every rank holding every chunk.
void ring_allgather(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  const int size = comm.size();
  const int rank = comm.rank();
  const int right = (rank + 1) % size;
  const int left = (rank - 1 + size) % size;
  for (int step = 0; step < size - 1; ++step) {
    const Floats out = ring_chunk(buffer, size, rank + 1 - step);
    const Floats in = ring_chunk(buffer, size, rank - step);
    auto receive = comm.irecv(left, options.tag, in.data, in.bytes(), options.category);
    auto sending = comm.isend(right, options.tag, out.data, out.bytes(), options.category);
    receive->wait();
    sending->wait();
  }
}

void allreduce_ring(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  ring_reduce_scatter(comm, buffer, options);
  ring_allgather(comm, buffer, options);
}

void broadcast_messages(Comm& comm, Floats buffer, int root, const CollectiveOptions& options) {
  const int size = comm.size();
  const int me = relative(comm.rank(), root, size);
  int mask = 1;
  // Receive from the parent: the rank that differs in my lowest set bit.
  while (mask < size) {
    if (me & mask) {
      recv(comm, absolute(me - mask, root, size), buffer, options);
      break;
    }
    mask <<= 1;
  }
  // Send to the children, largest subtree first.
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (me + mask < size) send(comm, absolute(me + mask, root, size), buffer, options);
  }
}

void reduce_messages(Comm& comm, Floats buffer, int root, const CollectiveOptions& options) {
  const int size = comm.size();
  if (size == 1) return;
  const int me = relative(comm.rank(), root, size);
  // The root sums in place; inner nodes sum into a copy so their input stays intact; leaves send as is.
  Scratch partial_storage(comm, me == 0 ? 0 : buffer.count);
  Floats partial = me == 0 ? buffer : partial_storage.floats();
  bool copied = me == 0;
  Scratch incoming(comm, buffer.count);
  for (int mask = 1; mask < size; mask <<= 1) {
    if (me & mask) {
      send(comm, absolute(me - mask, root, size), copied ? partial : buffer, options);
      return;
    }
    if (me + mask < size) {
      if (!copied) {
        copy(partial, buffer);
        copied = true;
      }
      recv(comm, absolute(me + mask, root, size), incoming.floats(), options);
      accumulate(comm, partial, incoming.floats(), options);
    }
  }
}

// The world's nodes (Comm::node_of) in the order of their lowest rank, each node's ranks ascending.
struct NodeLayout {
  std::vector<std::vector<int>> nodes;
  std::vector<int> node_of_rank;  // index into nodes
  int node = 0;                   // this rank's
  int local = 0;                  // this rank's index in its node
};

NodeLayout node_layout(const Comm& comm) {
  NodeLayout layout;
  std::unordered_map<int, int> index_of;  // node_of's number -> index into nodes
  layout.node_of_rank.reserve(static_cast<std::size_t>(comm.size()));
  for (int rank = 0; rank < comm.size(); ++rank) {
    const auto [found, added] = index_of.try_emplace(comm.node_of(rank), static_cast<int>(layout.nodes.size()));
    if (added) layout.nodes.emplace_back();
    layout.nodes[static_cast<std::size_t>(found->second)].push_back(rank);
    layout.node_of_rank.push_back(found->second);
  }
  layout.node = layout.node_of_rank[static_cast<std::size_t>(comm.rank())];
  const auto& mine = layout.nodes[static_cast<std::size_t>(layout.node)];
  layout.local = static_cast<int>(std::find(mine.begin(), mine.end(), comm.rank()) - mine.begin());
  return layout;
}

// The rank with index `local` on every node (the leaders for local 0).
std::vector<int> lane(const NodeLayout& layout, int local) {
  std::vector<int> ranks;
  ranks.reserve(layout.nodes.size());
  for (const auto& node : layout.nodes) ranks.push_back(node[static_cast<std::size_t>(local)]);
  return ranks;
}

// The hierarchical allreduces run the flat algorithms inside a node and among nodes through groups
// (core/group_comm.hpp) with the caller's tags: no pair of ranks is in two of one call's groups.
void allreduce_hierarchical(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  const NodeLayout layout = node_layout(comm);
  const auto& mine = layout.nodes[static_cast<std::size_t>(layout.node)];
  GroupComm node(comm, mine);
  // Sum the node's buffers into its leader, allreduce among the leaders, hand the result down the node's tree.
  reduce_messages(node, buffer, 0, options);
  if (layout.local == 0 && layout.nodes.size() > 1) {
    const std::vector<int> leaders = lane(layout, 0);
    GroupComm across(comm, leaders);
    allreduce_ring(across, buffer, options);
  }
  broadcast_messages(node, buffer, 0, options);
}

void allreduce_hierarchical_2d(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  const NodeLayout layout = node_layout(comm);
  const auto& mine = layout.nodes[static_cast<std::size_t>(layout.node)];
  std::size_t lanes = mine.size();
  for (const auto& node : layout.nodes) lanes = std::min(lanes, node.size());
  const auto local = static_cast<std::size_t>(layout.local);
  // Uneven nodes: a rank beyond the smallest node's count adds its buffer into local rank (i mod lanes) and gets
  // the result back from it.
  if (local >= lanes) {
    send(comm, mine[local % lanes], buffer, options);
    recv(comm, mine[local % lanes], buffer, options);
    return;
  }
  if (mine.size() > lanes) {
    Scratch incoming(comm, buffer.count);
    for (std::size_t extra = local + lanes; extra < mine.size(); extra += lanes) {
      recv(comm, mine[extra], incoming.floats(), options);
      accumulate(comm, buffer, incoming.floats(), options);
    }
  }
  const std::vector<int> first(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(lanes));
  GroupComm node(comm, first);
  // Reduce-scatter inside the node, allreduce this rank's shard with its lane on every node, allgather.
  ring_reduce_scatter(node, buffer, options);
  if (layout.nodes.size() > 1) {
    const std::vector<int> peers = lane(layout, layout.local);
    GroupComm across(comm, peers);
    allreduce_ring(across, ring_chunk(buffer, static_cast<int>(lanes), layout.local + 1), options);
  }
  ring_allgather(node, buffer, options);
  for (std::size_t extra = local + lanes; extra < mine.size(); extra += lanes) send(comm, mine[extra], buffer, options);
}

// What makes a collective's schedule: its name and every argument that shapes its messages.
CollectiveCall call_of(std::string name, std::size_t count, int root, const CollectiveOptions& options) {
  CollectiveCall call;
  call.name = std::move(name);
  call.key = "count " + std::to_string(count) + ", root " + std::to_string(root);
  call.category = options.category;
  call.count = count;
  call.tag = options.tag;
  return call;
}

}  // namespace

std::string_view to_string(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kRing:
      return "ring";
    case AllreduceAlgorithm::kRecursiveDoubling:
      return "recursive_doubling";
    case AllreduceAlgorithm::kRabenseifner:
      return "rabenseifner";
    case AllreduceAlgorithm::kReduceBroadcast:
      return "reduce_broadcast";
    case AllreduceAlgorithm::kHierarchical:
      return "hierarchical";
    case AllreduceAlgorithm::kHierarchical2d:
      return "hierarchical_2d";
  }
  return "?";
}

bool node_aware(AllreduceAlgorithm algorithm) {
  return algorithm == AllreduceAlgorithm::kHierarchical || algorithm == AllreduceAlgorithm::kHierarchical2d;
}

std::string node_map_text(const Comm& comm) {
  const NodeLayout layout = node_layout(comm);
  std::string text = "node map";
  for (std::size_t rank = 0; rank < layout.node_of_rank.size();) {
    std::size_t end = rank;
    while (end < layout.node_of_rank.size() && layout.node_of_rank[end] == layout.node_of_rank[rank]) ++end;
    text += " " + std::to_string(layout.node_of_rank[rank]) + "x" + std::to_string(end - rank);
    rank = end;
  }
  return text;
}

std::string allreduce_call_name(AllreduceAlgorithm algorithm) {
  return "allreduce " + std::string(to_string(algorithm));
}

AllreduceAlgorithm allreduce_algorithm_from_string(std::string_view name) {
  std::vector<std::string> valid;
  for (const auto algorithm : kAllreduceAlgorithms) {
    if (to_string(algorithm) == name) return algorithm;
    valid.emplace_back(to_string(algorithm));
  }
  throw UnknownNameError("allreduce algorithm", name, valid);
}

void broadcast(Comm& comm, Floats buffer, int root, const CollectiveOptions& options) {
  comm.run_collective(call_of("broadcast", buffer.count, root, options),
                      [&](Comm& c) { broadcast_messages(c, buffer, root, options); });
}

void reduce(Comm& comm, Floats buffer, int root, const CollectiveOptions& options) {
  comm.run_collective(call_of("reduce", buffer.count, root, options),
                      [&](Comm& c) { reduce_messages(c, buffer, root, options); });
}

void allreduce(Comm& comm, Floats buffer, AllreduceAlgorithm algorithm, const CollectiveOptions& options) {
  if (comm.size() == 1) return;
  const auto body = [&](Comm& c) {
    switch (algorithm) {
      case AllreduceAlgorithm::kRing:
        allreduce_ring(c, buffer, options);
        return;
      case AllreduceAlgorithm::kRecursiveDoubling:
        allreduce_recursive_doubling(c, buffer, options);
        return;
      case AllreduceAlgorithm::kRabenseifner:
        allreduce_rabenseifner(c, buffer, options);
        return;
      case AllreduceAlgorithm::kReduceBroadcast:
        reduce_messages(c, buffer, 0, options);
        broadcast_messages(c, buffer, 0, options);
        return;
      case AllreduceAlgorithm::kHierarchical:
        allreduce_hierarchical(c, buffer, options);
        return;
      case AllreduceAlgorithm::kHierarchical2d:
        allreduce_hierarchical_2d(c, buffer, options);
        return;
    }
  };
  CollectiveCall call = call_of(allreduce_call_name(algorithm), buffer.count, 0, options);
  if (node_aware(algorithm)) call.key += ", " + node_map_text(comm);
  comm.run_collective(call, body);
}

void reduce_scatter(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  if (comm.size() == 1) return;
  comm.run_collective(call_of("reduce-scatter ring", buffer.count, 0, options),
                      [&](Comm& c) { ring_reduce_scatter(c, buffer, options); });
}

void allgather(Comm& comm, Floats buffer, const CollectiveOptions& options) {
  if (comm.size() == 1) return;
  comm.run_collective(call_of("allgather ring", buffer.count, 0, options),
                      [&](Comm& c) { ring_allgather(c, buffer, options); });
}

Shard ring_shard(std::size_t count, int ranks, int rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    throw InputError("ring shard of rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                     ": the rank must be in [0, ranks)");
  }
  return shard_of(count, ranks, (rank + 1) % ranks);  // ring_reduce_scatter leaves rank r with chunk r + 1
}

void round_robin_gather(Comm& comm, int master, Floats buffer, bool reply, const ReceiveHandler& on_receive,
                        const CollectiveOptions& options) {
  if (comm.rank() != master) {
    send(comm, master, buffer, options);
    if (reply) recv(comm, master, buffer, options);
    return;
  }
  Scratch incoming(comm, buffer.count);
  for (int worker = 0; worker < comm.size(); ++worker) {
    if (worker == master) continue;
    recv(comm, worker, incoming.floats(), options);
    if (reply) send(comm, worker, buffer, options);
    on_receive(worker, incoming.floats().span());
  }
}

void serve_parameter_server(Comm& comm, std::size_t push_count, std::size_t requests, const PushHandler& handler,
                            const CollectiveOptions& options) {
  DSGD_ENFORCE(static_cast<bool>(handler.reply), "parameter server without a reply handler");
  Scratch pushed(comm, push_count);
  for (std::size_t served = 0; served < requests; ++served) {
    const Status status =
        comm.recv(kAnySource, options.tag, pushed.floats().data, push_count * sizeof(float), options.category);
    send(comm, status.source, handler.reply(status.source, pushed.floats().span()), options);
    if (handler.after_reply) handler.after_reply(status.source, pushed.floats().span());
  }
}

void parameter_server_exchange(Comm& comm, int server, Floats push, Floats pull, const CollectiveOptions& options) {
  send(comm, server, push, options);
  recv(comm, server, pull, options);
}

Shard shard_of(std::size_t count, int shards, int index) {
  if (shards < 1 || index < 0 || index >= shards) {
    throw InputError("shard " + std::to_string(index) + " of " + std::to_string(shards) +
                     ": a shard index must be in [0, shards) with shards >= 1");
  }
  const auto begin = [&](int i) { return count * static_cast<std::size_t>(i) / static_cast<std::size_t>(shards); };
  return {begin(index), begin(index + 1) - begin(index)};
}

void sharded_parameter_server_exchange(Comm& comm, int servers, Floats push, Floats pull,
                                       const CollectiveOptions& options) {
  if (servers == 1) {
    parameter_server_exchange(comm, 0, push, pull, options);
    return;
  }
  std::vector<RequestPtr> requests;
  requests.reserve(2 * static_cast<std::size_t>(servers));
  // Sends before receives: a reply comes only after its push, so the order changes no transfer, but SimGrid 3.32
  // drops a finished transfer from its actor's list of live ones by a scan from the front, and the pushes, which
  // end first, are then found first: 512 workers x 128 servers simulate twice as fast (docs/simulation.md).
  for (int server = 0; server < servers; ++server) {
    const Shard shard = shard_of(push.count, servers, server);
    const Floats out = slice(push, shard.offset, shard.count);
    requests.push_back(comm.isend(server, options.tag, out.data, out.bytes(), options.category));
  }
  for (int server = 0; server < servers; ++server) {
    const Shard shard = shard_of(pull.count, servers, server);
    const Floats into = slice(pull, shard.offset, shard.count);
    requests.push_back(comm.irecv(server, options.tag, into.data, into.bytes(), options.category));
  }
  for (auto& request : requests) request->wait();
}

}  // namespace dsgd
