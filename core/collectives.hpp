#pragma once
// Collectives written once over Comm's point-to-point messages, so every executor has them and the simulated
// schedule is the real one. Costs in the alpha-beta-gamma model are in simulate/collective_costs.hpp;
// algorithms/README.md tabulates them. Reductions are sums of floats; each local reduction is a compute step
// ("elementwise", 1 FLOP per element) of the collective's category, so simulation charges it at the host's rate.
//
// Buffers may be size-only (data == nullptr) when comm.has_payload() is false: the messages and compute steps
// happen with their sizes, and no arithmetic.

#include <array>
#include <cstddef>
#include <functional>
#include <span>

#include "core/comm.hpp"

namespace dsgd {

// A float buffer of `count` elements; `data` may be null only on a comm without payloads.
struct Floats {
  float* data = nullptr;
  std::size_t count = 0;
  std::size_t bytes() const { return count * sizeof(float); }
  std::span<float> span() const { return data ? std::span<float>(data, count) : std::span<float>(); }
};

// Tags at and above this are reserved for collectives; algorithms use smaller ones.
inline constexpr Tag kFirstCollectiveTag = 1 << 20;

struct CollectiveOptions {
  Category category = Category::kGpuGpuPara;
  Tag tag = kFirstCollectiveTag;  // collectives running at the same time need different tags
};

// The flat algorithms ignore where ranks run. The hierarchical ones follow Comm::node_of (nodes in the order of
// their lowest rank; a node's ranks in rank order, local rank 0 its leader):
//  * kHierarchical: binomial reduce inside each node to its leader, ring allreduce among the leaders, binomial
//    broadcast inside the node. Nodes may hold different numbers of ranks.
//  * kHierarchical2d (NCCL's and Horovod's two-level ring): with S the smallest node's rank count, ring
//    reduce-scatter inside each node among its first S ranks (local rank i ends with shard (i + 1) mod S), ring
//    allreduce of shard i among the local ranks i of all nodes -- S rings crossing the network at once -- and
//    ring allgather inside the node. A node's ranks beyond the first S (uneven nodes) first add their buffer into
//    local rank (i mod S) and get the result back from it at the end.
// Their sums are bit-identical across executors for equal node maps (the order of additions follows the map).
enum class AllreduceAlgorithm {
  kRing,
  kRecursiveDoubling,
  kRabenseifner,
  kReduceBroadcast,
  kHierarchical,
  kHierarchical2d
};
std::string_view to_string(AllreduceAlgorithm algorithm);
// The CollectiveCall::name an allreduce runs under: "allreduce ring", ...
std::string allreduce_call_name(AllreduceAlgorithm algorithm);
// Parses "ring", "recursive_doubling", "rabenseifner", "reduce_broadcast", "hierarchical", "hierarchical_2d";
// UnknownNameError lists them.
AllreduceAlgorithm allreduce_algorithm_from_string(std::string_view name);
inline constexpr std::array<AllreduceAlgorithm, 6> kAllreduceAlgorithms = {
    AllreduceAlgorithm::kRing,         AllreduceAlgorithm::kRecursiveDoubling,
    AllreduceAlgorithm::kRabenseifner, AllreduceAlgorithm::kReduceBroadcast,
    AllreduceAlgorithm::kHierarchical, AllreduceAlgorithm::kHierarchical2d};
// Whether `algorithm` follows Comm::node_of (its schedule, and CollectiveCall::key, depend on the node map).
bool node_aware(AllreduceAlgorithm algorithm);
// The node map of `comm` as CollectiveCall::key puts it: runs of consecutive ranks on one node, each node numbered
// by the order of its lowest rank ("node map 0x8 1x8" for two nodes of 8 ranks).
std::string node_map_text(const Comm& comm);

// Binomial-tree broadcast of root's buffer into everyone's: ceil(log2 P) rounds.
void broadcast(Comm& comm, Floats buffer, int root, const CollectiveOptions& options = {});

// Binomial-tree sum into root's buffer; other ranks' buffers are left as they were.
void reduce(Comm& comm, Floats buffer, int root, const CollectiveOptions& options = {});

// Sum over all ranks, result in every rank's buffer.
void allreduce(Comm& comm, Floats buffer, AllreduceAlgorithm algorithm, const CollectiveOptions& options = {});

// The ring allreduce's two halves, for sharded data parallelism (ZeRO): after reduce_scatter rank r holds the sum
// over all ranks of its shard, ring_shard(buffer.count, size, r), and partial sums elsewhere; allgather then copies
// every rank's shard to every rank. Together they are allreduce(kRing) message for message, so a sharded update
// gives the same bits as a replicated one.
void reduce_scatter(Comm& comm, Floats buffer, const CollectiveOptions& options = {});
void allgather(Comm& comm, Floats buffer, const CollectiveOptions& options = {});
// Original EASGD's pattern: the master talks to one worker at a time, in rank order. Each worker sends `buffer`
// to the master; the master, if `reply`, sends its `buffer` back, which the worker receives into its `buffer`,
// and then calls on_receive(worker, received) (an empty span without payloads). The handler runs after the
// reply so that the worker does not wait for it, and so that the reply can be the master's live state (EASGD's
// centre before the move) without a copy.
using ReceiveHandler = std::function<void(int worker, std::span<const float> received)>;
void round_robin_gather(Comm& comm, int master, Floats buffer, bool reply, const ReceiveHandler& on_receive,
                        const CollectiveOptions& options = {});

// A parameter server, first come first served (ps-lite's KVServer with a pluggable request handle): the server
// serves `requests` pushes of `push_count` floats from any workers in arrival order. For each, handler.reply
// runs first and names the floats to answer with: a buffer the server keeps, its weights say, sent as they are
// (data null without payloads), so no copy is made. Then handler.after_reply, if set, runs once the answer is
// sent: work the worker need not wait for, like EASGD's move of the centre. Pushed spans are empty without
// payloads. Async SGD, Async EASGD and momentum differ only in the handler.
struct PushHandler {
  std::function<Floats(int worker, std::span<const float> pushed)> reply;
  std::function<void(int worker, std::span<const float> pushed)> after_reply;
};
void serve_parameter_server(Comm& comm, std::size_t push_count, std::size_t requests, const PushHandler& handler,
                            const CollectiveOptions& options = {});
// The worker side: pushes `push` and receives the server's reply into `pull`.
void parameter_server_exchange(Comm& comm, int server, Floats push, Floats pull, const CollectiveOptions& options = {});

// A parameter server sharded over S server ranks, ps-lite style: server `index` owns the contiguous key range
// [floor(count index / S), floor(count (index + 1) / S)) of the packed parameters, so shards differ by at most one
// float (the ring allreduce's split).
struct Shard {
  std::size_t offset = 0;
  std::size_t count = 0;
};
// Throws InputError unless 0 <= index < shards.
Shard shard_of(std::size_t count, int shards, int index);
// The part of a buffer of `count` floats that rank `rank` of `ranks` owns after reduce_scatter (above). Throws
// InputError unless 0 <= rank < ranks.
Shard ring_shard(std::size_t count, int ranks, int rank);
// The worker side with the server sharded over ranks 0..servers-1, each serving its shard with
// serve_parameter_server: pushes every server its shard of `push` and receives its reply into the same shard of
// `pull`, all shards in flight at once (every send posted, then every receive, then all waited). With one server it
// is parameter_server_exchange(comm, 0, ...), message for message.
void sharded_parameter_server_exchange(Comm& comm, int servers, Floats push, Floats pull,
                                       const CollectiveOptions& options = {});

}  // namespace dsgd
