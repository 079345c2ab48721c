#pragma once
// One worker's Comm in the SimGrid executor, and the World the actors of one simulation share. Parallel to
// measure/threads/comm.hpp and measure/mpi/comm.hpp.
//
// Messages. A send puts a message -- source, tag, declared bytes and, with payloads, a copy of the data taken at
// isend() -- whose simulated size is the declared bytes, for (destination, tag). The transfer is a rendezvous, as
// MPI's protocol for large messages: it starts once the receiver has posted a receive for that (destination, tag),
// and the send completes when the transfer does. Sends and receives of one (destination, tag) pair first come,
// first served, as in one SimGrid mailbox, but on mailboxes of a pool (World::post_send).
// Matching keeps MPI's rules (core/matching.hpp). A receiver posts one SimGrid receive per unmatched irecv() for
// its (rank, tag) and takes arrivals oldest first: an arrival goes to the oldest posted receive that
// accepts its source (kAnySource accepts any: first come, first served), else into a per-rank stash that later
// receives search first. Pairing, stashes and posted receives are all FIFO, so messages of one (source, destination,
// tag) never overtake each other. A message that arrives while its receiver waits for another source has already
// crossed the network: that is MPI's unexpected message, received eagerly.
//
// Time. Every wait is bounded by WorldOptions::timeout_s of simulated time (TimeoutError names who waited for whom;
// an infinite timeout leaves deadlocks to SimGrid's detector, which the executor turns into a CommError). compute()
// advances the clock by the roofline time of the step on the rank's site -- max(flops / (peak x the kernel class's
// efficiency), bytes / memory bandwidth; batch copies at the copy bandwidth) -- times the node's noise factor, and
// runs the kernel only with payloads: where it is called, or for a rank-local kernel (ComputeStep::rank_local) of a
// rank's own actor on the world's kernel pool, submitted before the simulated time and waited for after it, so that
// ranks computing at the same simulated time compute on several cores (simulate/simgrid/kernel_pool.hpp). Shared
// vectors are one std::vector<float> per world (actors run one at a time, so no races); a read or add costs its bytes
// (an add: load and store) at the rank's memory bandwidth, or nothing if the platform lists no memory. Each call
// charges the simulated time spent inside it to its category.
//
// SimGrid's types stay in comm.cpp: this header is shared by executor.cpp and comm.cpp only.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/comm.hpp"
#include "core/world.hpp"
#include "platforms/platform.hpp"
#include "simulate/compute_cost.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace simgrid::s4u {
class Host;
class Mailbox;
}  // namespace simgrid::s4u

namespace dsgd::simulate {

class SimgridComm;
class KernelPool;
class FlowCollectives;
struct ChipLoad;
class Inbox;
struct SimMessage;
struct SharedVectors;

// What a blocked rank waits for, kept so that a deadlock report can say who waited for whom.
struct Waiting {
  enum class Kind { kNothing, kReceive, kSend, kSharedVector, kCollective, kStreamEnd, kStreamPost };
  Kind kind = Kind::kNothing;
  int peer = 0;  // source (or kAnySource) of a receive, destination of a send
  Tag tag = 0;
  std::size_t bytes = 0;
  std::string name;  // of a shared vector or a collective
};

// Formats "a message from rank 0 (tag 7, 4096 bytes)", "rank 1 to receive (tag 7, 4096 bytes)", ...
std::string describe(const Waiting& waiting);

struct SimNic;  // a rank's datagram network interface (comm.cpp)

// The state the actors of one simulation share. Created before Engine::run() and destroyed after it.
class World {
 public:
  // `hosts[r]` runs rank r at `sites[r]`'s rates (a memory bandwidth of 0 makes shared-vector access free);
  // `flow_collectives` runs deterministic collectives at flow fidelity (simulate/simgrid/flows.hpp); `noise` and
  // `noise_seed` spread compute times; up to `trace_events` timeline spans are kept (0: none);
  // `fold_fatpipe_flows` and `flow_replicas` are SimulationOptions'.
  World(const WorldOptions& options, std::vector<::simgrid::s4u::Host*> hosts, std::vector<RankSite> sites,
        bool flow_collectives, platforms::Noise noise = {}, std::uint64_t noise_seed = 0, std::size_t trace_events = 0,
        bool fold_fatpipe_flows = true, bool flow_replicas = true);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const WorldOptions& options() const { return options_; }
  int size() const { return options_.size; }
  ::simgrid::s4u::Host* host(int rank) const { return hosts_[static_cast<std::size_t>(rank)]; }
  const RankSite& site(int rank) const { return sites_[static_cast<std::size_t>(rank)]; }
  // Per rank: its node (Comm::node_of): the site's, or the emulated grouping of WorldOptions::ranks_per_node.
  const std::vector<int>& nodes() const { return nodes_; }
  // The noise factor of a compute step of `node` starting now, the `step`-th of its rank (ComputeNoise).
  double noise_factor(int node, std::uint64_t step);
  // Keeps `span` if the timeline has room (counts it as dropped otherwise).
  void record(const TimelineSpan& span);
  const std::vector<TimelineSpan>& timeline() const { return timeline_; }
  std::size_t timeline_dropped() const { return timeline_dropped_; }
  // The timeout to hand SimGrid: timeout_s, or -1 (wait forever) if timeout_s is infinite.
  double simgrid_timeout() const;
  SimgridComm& comm(int rank) { return *comms_[static_cast<std::size_t>(rank)]; }

  // The mailbox of messages to `destination` with `tag`, created on first use (datagrams only: messages pair below).
  ::simgrid::s4u::Mailbox* mailbox(int destination, Tag tag);

  // Where a send to, or a receive of, (`destination`, `tag`) is posted. dsgd pairs them as a SimGrid mailbox of
  // their own would -- a send with the oldest receive waiting, else a receive with the oldest send waiting -- and
  // puts both sides of a pair on one mailbox of a pool, where each finds the other at once: SimGrid 3.32 matches by
  // scanning a mailbox's whole queue (docs/simulation.md "Pairing messages"). May yield (a new mailbox is a simcall)
  // before it pairs, never after; the caller posts on the mailbox at once. `waiting` is 0 if the post paired at
  // once, else what names it to unpost().
  struct Post {
    ::simgrid::s4u::Mailbox* mailbox = nullptr;
    std::uint64_t waiting = 0;
  };
  Post post_send(int destination, Tag tag) { return pair(destination, tag, /*send=*/true); }
  Post post_receive(int destination, Tag tag) { return pair(destination, tag, /*send=*/false); }
  // A send or receive posted for (`destination`, `tag`) ended (timed out, failed, cancelled): if it still waits for
  // a partner, it waits no more, and its mailbox leaves the pool (SimGrid may still hold the ended activity there).
  void unpost(int destination, Tag tag, const Post& post);

  // Records the first failure and kills every other actor so the simulation ends now (later failures are
  // consequences). Call from the failing actor, which then returns.
  void fail(int rank, std::exception_ptr error);
  const FirstFailure& failure() const { return failure_; }

  // What each rank's actor -- and its stream's (Comm::start_stream) -- is blocked on; the deadlock report lists them.
  void set_waiting(const SimgridComm& comm, Waiting waiting);
  void clear_waiting(const SimgridComm& comm);
  // Called when SimGrid finds every remaining actor blocked forever: records a CommError naming them.
  void on_deadlock();

  // Keeps a message whose transfer failed alive until the engine is done with it.
  void bury(std::unique_ptr<SimMessage> message);

  // A message payload holding a copy of `bytes` at `data`: in a delivered message's storage kept for the next of its
  // size, else in fresh storage. An iteration's messages repeat its sizes, and fresh storage is faulted in page by
  // page (docs/time-to-accuracy.md "Cost"). Actors run one at a time, so no lock.
  std::vector<std::byte> copy_payload(const void* data, std::size_t bytes);
  // Keeps a delivered message's payload for copy_payload (up to kSparePayloadBytes in all; the rest is freed).
  void recycle_payload(std::vector<std::byte> payload);

  // Datagrams (Comm::datagrams) are the World's from their send until their receiver takes them, so one nobody
  // receives is freed with the World whatever SimGrid does with its transfer. pending_datagrams(r): those kept for
  // rank r (on their way or waiting in its mailbox).
  void* keep_datagram(int destination, Arrival datagram);
  Arrival take_datagram(int destination, void* kept);
  // The key of this world's datagrams, drawn on first use (DatagramKey::random): every rank's endpoint shares it.
  const DatagramKey& datagram_key();
  std::size_t pending_datagrams(int destination) const;
  // Rank r has finished (SimgridComm::finish): its mailbox has no receiver any more, so a datagram for it is lost.
  void close_datagrams(int rank);
  bool datagrams_closed(int rank) const;

  SharedVectors& shared_vectors() { return *shared_; }
  // Null unless collectives run at flow fidelity.
  FlowCollectives* flow_collectives() { return flows_.get(); }
  // Where rank-local kernels run (simulate/simgrid/kernel_pool.hpp); null: each where its rank computes. The pool
  // must outlive the actors.
  void set_kernel_pool(KernelPool* pool) { kernel_pool_ = pool; }
  KernelPool* kernel_pool() const { return kernel_pool_; }

  // Runs one compute step of `rank` on its shared chip (RankSite::chip >= 0): `alone_s` long with the chip's other
  // cores idle, `busy_s` with all busy, at the pace shared_chip_seconds gives for the chip's computing ranks,
  // re-paced whenever one of them starts or ends a step.
  void compute_on_chip(int rank, double alone_s, double busy_s);

  // Whether a message between the ranks on `source` and `destination` starting now shares cores with computing
  // ranks (platforms::SharedChip::loaded_link): both on one shared chip, while the chip's ranks on other hosts run
  // compute steps on all its cores but one or more.
  bool transfer_shares_cores(const ::simgrid::s4u::Host* source, const ::simgrid::s4u::Host* destination) const;

 private:
  WorldOptions options_;
  std::vector<::simgrid::s4u::Host*> hosts_;
  std::vector<RankSite> sites_;
  std::vector<int> nodes_;
  ComputeNoise noise_;
  std::size_t trace_events_;
  std::vector<TimelineSpan> timeline_;
  std::size_t timeline_dropped_ = 0;
  std::vector<std::unique_ptr<SimgridComm>> comms_;
  std::unordered_map<std::uint64_t, ::simgrid::s4u::Mailbox*> mailboxes_;
  // The posted sends or receives of one (destination, tag) still waiting for a partner, oldest first. Sends and
  // receives never wait together (the first of the other side pairs).
  struct Unpaired {
    std::deque<Post> posts;
    bool sends = false;
  };
  Post pair(int destination, Tag tag, bool send);
  std::unordered_map<std::uint64_t, Unpaired> unpaired_;
  std::vector<::simgrid::s4u::Mailbox*> spare_mailboxes_;  // empty: no activity in their queues
  std::size_t mailboxes_made_ = 0;
  std::uint64_t posts_waited_ = 0;  // the last Post::waiting given
  FirstFailure failure_;
  std::vector<Waiting> waiting_;  // ranks' actors, then their streams
  std::vector<std::unique_ptr<SimMessage>> graveyard_;
  static constexpr std::size_t kSparePayloadBytes = std::size_t{256} << 20;
  std::unordered_map<std::size_t, std::vector<std::vector<std::byte>>> spare_payloads_;  // by size
  std::size_t spare_payload_bytes_ = 0;
  std::unordered_map<const void*, std::unique_ptr<Arrival>> datagrams_;
  std::optional<DatagramKey> datagram_key_;
  std::vector<std::size_t> pending_datagrams_;  // by destination
  std::vector<bool> closed_datagrams_;          // by rank: finished receivers
  std::unique_ptr<SharedVectors> shared_;
  std::unique_ptr<FlowCollectives> flows_;
  KernelPool* kernel_pool_ = nullptr;
  std::map<int, std::unique_ptr<ChipLoad>> chips_;                     // by RankSite::chip
  std::unordered_map<const ::simgrid::s4u::Host*, int> chip_of_host_;  // the hosts of ranks on a shared chip
};

class SimgridComm final : public Comm {
 public:
  // Rank `rank`'s comm, or with `caller` its stream's: an actor of its own on the caller's host, sharing the caller's
  // inboxes (only one of the two communicates at a time) and noise sequence, with its own breakdown.
  SimgridComm(World& world, int rank, SimgridComm* caller = nullptr);
  ~SimgridComm() override;

  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  double now_s() const override;
  std::string_view executor() const override { return "simgrid"; }
  bool has_payload() const override { return world_.options().payload; }
  int node_of(int rank) const override { return node_in(world_.nodes(), rank); }

  RequestPtr isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) override;
  RequestPtr irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) override;
  void compute(const ComputeStep& step) override;
  // A second actor on the rank's host; the host's cores are shared between the two actors' compute steps as SimGrid
  // shares them (a stream's steps on a shared chip run outside its pacing, plain on the host).
  StreamPtr start_stream(StreamBody body) override;
  // Deferred: `work` runs in the get(), inside whatever waits for it (the next batch copy's kernel, on the pool).
  std::future<void> start_beside(std::function<void()> work) override;
  // On the kernel pool, where the world has one and payloads: handed over, then the actor yields so that the other
  // actors of this instant hand over theirs, then waits for it (KernelPool::Ticket::wait).
  void set_up(const std::function<void()>& work) override;
  // On the kernel pool, where the world has one and payloads: all but the first kernel are handed over, the first
  // runs here, and the wait runs what is still queued (KernelPool::Ticket::wait).
  void run_side_by_side(std::span<const std::function<void()>> kernels) override;
  int side_by_side() const override;
  void run_collective(const CollectiveCall& call, const std::function<void(Comm&)>& body) override;
  std::shared_ptr<SharedVector> shared_vector(const std::string& name, std::size_t count,
                                              std::span<const float> initial) override;
  // Datagrams over the simulated network: docs/dogwild.md "In simulation". Not from a stream.
  std::shared_ptr<DatagramEndpoint> datagrams(const DatagramOptions& options) override;

  World& world() { return world_; }
  bool is_stream() const { return caller_ != nullptr; }
  // The matching state of this rank's messages with `tag`.
  Inbox& inbox(Tag tag);
  // Advances this actor's clock by `seconds` and charges them to `category`.
  void spend(double seconds, Category category);
  // A request destroyed without wait() waited in its destructor and failed there: the error is kept here and
  // rethrown by finish().
  void defer_error(std::exception_ptr error);
  // After the worker returned: withdraws receives nobody waits for and rethrows a deferred error.
  void finish();

 private:
  void charged(Category category, double seconds) override;
  // The pool this rank's kernels may run on; null where they run here (no pool, no payloads, a stream).
  KernelPool* side_by_side_pool() const;

  World& world_;
  int rank_;
  SimgridComm* caller_ = nullptr;    // a stream's: the rank's own comm
  std::uint64_t compute_steps_ = 0;  // for the noise generator (a stream counts in its caller's)
  std::map<Tag, std::unique_ptr<Inbox>> inboxes_;
  std::exception_ptr deferred_error_;
  bool receives_datagrams_ = false;  // this rank's actor is its datagram mailbox's permanent receiver
  std::shared_ptr<SimNic> nic_;      // its datagrams' network interface (comm.cpp), told to end in finish()
};

}  // namespace dsgd::simulate
