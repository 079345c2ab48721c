#pragma once
// The communication interface every SGD algorithm is written against (docs/design.md "The comm interface"), after
// gloo's transport interface: an algorithm sees one worker's Comm -- rank, size, clock, point-to-point messages,
// compute steps, shared vectors -- and never which executor runs it. Three executors implement it with parallel
// file layouts: measure/threads/, measure/mpi/ and simulate/simgrid/ (executor.hpp + comm.hpp in each).
//
// Semantics every executor keeps (the executor tests hold them to it, each running tests/core/collective_checks.hpp):
//  * Messages between one (source, destination, tag) triple arrive in the order they were sent; a receive matches
//    the first such message (MPI's non-overtaking rule). kAnySource matches any source, first come first served.
//  * A message has a declared size in bytes. Its payload is optional: an executor without payloads (SimGrid in
//    size-only mode, for thousands of workers) accepts null data and delivers none; has_payload() says which.
//  * A receive whose declared size differs from the message's is an error (CommError naming both sizes).
//  * Every blocking wait gives up after the world's timeout (default 60 s; simulated seconds in simulation) with a
//    TimeoutError naming who waited for whom. Nothing hangs.
//  * Every step carries a time-breakdown category (core/breakdown.hpp); the time a worker spends in a step is
//    charged to it. Natively that is wall time inside the call; in simulation, simulated time.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/breakdown.hpp"
#include "core/datagram.hpp"
#include "core/error.hpp"
#include "core/layer_kernels.hpp"

namespace dsgd {

using Tag = std::int32_t;
inline constexpr int kAnySource = -1;

// A communication failed: a size mismatch, a rank out of range, a peer that died.
class CommError : public Error {
 public:
  using Error::Error;
};

// A blocking wait ran past the world's timeout. The message names the waiting rank, the awaited peer and tag.
class TimeoutError : public CommError {
 public:
  using CommError::CommError;
};

// What a receive found.
struct Status {
  int source = 0;
  Tag tag = 0;
  std::size_t bytes = 0;
};

// A pending send or receive. wait() blocks until it is done and returns the status (for a send: destination and
// size). Destroying a request that was not waited for waits for it (a send's buffer must outlive the transfer).
class Request {
 public:
  virtual ~Request() = default;
  virtual Status wait() = 0;
};
using RequestPtr = std::unique_ptr<Request>;

// For a native request's destructor: waits for `request` unless `waited`, and drops a failure there (a destructor
// must not throw; an unwaited failure was the caller's to see, or surfaces through the world's abort).
inline void finish_unwaited(Request& request, bool waited) noexcept {
  if (waited) return;
  try {
    request.wait();
  } catch (...) {
  }
}

// --- Streams: a second thread of control of one rank ---------------------------------------------------------------
// Comm::start_stream runs a body concurrently with its caller, as one more thread of control of the same rank:
// natively a thread, in SimGrid a second actor on the rank's host. So the stream's messages overlap the caller's
// compute steps, as a communication thread does in wait-free backpropagation (gradients leave while the backward
// pass goes on). The caller hands work over with Stream::post(); the stream takes each post with StreamPosts::take().

// The stream's side of its caller's posts.
class StreamPosts {
 public:
  virtual ~StreamPosts() = default;
  // Blocks until the caller has posted once more than take() returned so far, and takes that post. The wait is
  // charged to `wait` of the stream's breakdown. TimeoutError after the world's timeout; CommError if the caller
  // gave the stream up.
  virtual void take() = 0;
};

class Comm;
// A stream's body: the stream's own Comm (see Comm::start_stream) and its caller's posts.
using StreamBody = std::function<void(Comm& stream, StreamPosts& posts)>;

// What a stream did, from Stream::join().
struct StreamResult {
  // The stream's own time per category. It ran beside the caller's time, so it is in no rank's breakdown.
  Breakdown stream;
  double joined_s = 0;  // how long join() waited for the body to end (charged to the caller's breakdown)
};

// The caller's side of a stream.
class Stream {
 public:
  // Joins a stream that was not joined (its failure cannot leave a destructor: dropped natively, rethrown when
  // the rank's worker returns in SimGrid); while an exception unwinds, gives it up instead: its next take() throws.
  virtual ~Stream() = default;
  // One more post for the stream to take. Never blocks.
  virtual void post() = 0;
  // Waits for the body to return, charges the wait to `category` of the caller's breakdown, and rethrows what the
  // body threw. TimeoutError after twice the world's timeout (the body's own waits end within one). Call once.
  virtual StreamResult join(Category category) = 0;
};
using StreamPtr = std::unique_ptr<Stream>;

// One step of computation. Natively the kernel runs and is timed. In simulation the worker's clock advances by
// the roofline time max(flops / (the host's rate for kernel_class), bytes / (its memory bandwidth)), and the
// kernel also runs if the simulation carries payloads (numeric mode), so results stay exact.
struct ComputeStep {
  double flops = 0;
  std::string_view kernel_class = "gemm";  // a rate class of the platform: "gemm", "conv", "elementwise", ...
  Category category = Category::kForwardBackward;
  std::function<void()> kernel = {};  // may be empty (pure cost)
  double bytes = 0;                   // memory traffic (read + written)
  // The layer kernels the step runs, where it knows them (a training step): a platform that describes how its
  // processors run kernels (platforms::KernelModel) prices them one by one by shape instead of `flops` at the
  // class's rate. `resident_bytes`: what the rank holds while they run, for the memory tier that serves them.
  std::span<const LayerKernel> kernels = {};
  double resident_bytes = 0;
  // The kernel reads and writes only this rank's own memory (and data nobody writes, such as the data set), so a
  // numeric simulation may run it on another OS thread while the other ranks' actors go on (docs/time-to-accuracy.md
  // "Cost"); native executors run every kernel where it is called.
  bool rank_local = false;
};

// A vector of floats shared by all workers of a world and updated without locks, for Hogwild-style algorithms.
// Concurrent add()s may interleave element by element and lose updates, as Hogwild's do on real hardware, but
// never race in the C++ memory model (natively: relaxed atomics).
class SharedVector {
 public:
  virtual ~SharedVector() = default;
  virtual std::size_t size() const = 0;
  // Copies elements [offset, offset + out.size()) into out (no snapshot guarantee across elements).
  virtual void read(std::size_t offset, std::span<float> out, Category category) = 0;
  // Adds scale * delta element-wise at [offset, offset + delta.size()), each element as a separate load and store.
  virtual void add(std::size_t offset, std::span<const float> delta, float scale, Category category) = 0;
};

// A collective whose messages depend only on rank, size and its arguments -- never on data or on timing -- so
// that its schedule can be derived once and replayed (Comm::run_collective). `name` says what it is in messages;
// `key` holds every argument that shapes the messages (root, element count, algorithm): calls with equal name and
// key on worlds of equal size have equal schedules. The messages' tag labels them without shaping them, so it is
// not in `key`: buckets of equal size allreduced under their own tags share one schedule (WFBP's per-layer buckets).
struct CollectiveCall {
  std::string name;
  std::string key;
  Category category = Category::kGpuGpuPara;  // where a rank's time inside the collective is charged
  std::size_t count = 0;  // floats of the buffer (also in `key`), for executors that price a collective in closed form
  Tag tag = 0;            // the messages' tag: every rank calls with the same one
  bool operator==(const CollectiveCall&) const = default;
};

// An unreliable channel's settings (Comm::datagrams); each transport reads its own.
struct DatagramOptions {
  std::size_t queue_datagrams = 4096;  // threads, SimGrid: datagrams a receiver holds before it drops more
  // SimGrid: the bytes a sender's network interface holds, queued or on the wire (its datagrams leave one at a
  // time); a datagram that does not fit is refused (SendOutcome::kRefused), as a full socket buffer refuses a
  // non-blocking send, so a sender streams at what its route carries instead of flooding it.
  std::size_t send_buffer_bytes = 256 << 10;
  int receive_buffer_bytes = 4 << 20;  // UDP: the socket's receive buffer asked for
  double send_rate_Bps = 0;            // UDP: bytes per second a sender may put out (0: unpaced)
  double loss_rate = 0;                // injected at the senders (LossModel), on every transport
  std::uint64_t loss_seed = 1;
  bool multicast = false;  // UDP: join every peer's multicast group, so send_to_group goes out once
};
// The loss model of `options`: none at a rate of 0.
std::optional<LossModel> injected_loss(const DatagramOptions& options);

// One worker's view of a world of size() workers.
class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Seconds since the world started: wall clock natively, simulated clock in simulation.
  virtual double now_s() const = 0;
  // "threads", "mpi" or "simgrid".
  virtual std::string_view executor() const = 0;
  // False when messages carry only sizes (data pointers may be null; compute kernels do not run).
  virtual bool has_payload() const = 0;
  // The node rank `rank` runs on, for collectives that follow the machine's hierarchy (hierarchical allreduce):
  // ranks with equal numbers share a node (memory, PCIe tree, NIC). Numbers are otherwise arbitrary, need not be
  // contiguous, and every rank of a world sees the same map. With WorldOptions::ranks_per_node R > 0 it is r / R
  // on every executor (an emulated grouping); otherwise the executor's own: threads, all on node 0; MPI, the
  // shared-memory nodes (MPI_COMM_TYPE_SHARED), numbered by their lowest rank; SimGrid and the analytic level, the
  // platform node the placement put the rank on. Throws CommError for a rank out of range.
  virtual int node_of(int rank) const = 0;

  // Starts sending `bytes` bytes from `data` (null allowed iff !has_payload()) to `destination`.
  virtual RequestPtr isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) = 0;
  // Starts receiving a message of exactly `bytes` bytes from `source` (or kAnySource) into `data`.
  virtual RequestPtr irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) = 0;

  Status send(int destination, Tag tag, const void* data, std::size_t bytes, Category category) {
    return isend(destination, tag, data, bytes, category)->wait();
  }
  Status recv(int source, Tag tag, void* data, std::size_t bytes, Category category) {
    return irecv(source, tag, data, bytes, category)->wait();
  }

  virtual void compute(const ComputeStep& step) = 0;

  // Runs this rank's part of a deterministic collective: `body` is its point-to-point code, and every rank calls
  // run_collective with an equal `call` in the same order. The default runs `body` here, message by message. An
  // executor may instead simulate the collective as a whole (the SimGrid executor's flow fidelity), deriving its
  // schedule by running `body` for every rank against a recording Comm -- so `body` must take all it needs from
  // the Comm it is given (rank, size, payload), and its messages may depend only on those and on `call`.
  virtual void run_collective(const CollectiveCall& /*call*/, const std::function<void(Comm&)>& body) { body(*this); }

  // Starts `body` as a second thread of control of this rank ("Streams" above). The body gets a Comm of its own:
  // the same rank, world, clock and messages, with its own breakdown (StreamResult::stream). Only one of the two
  // communicates at a time: until join() the caller may compute and charge, but sends, receives, waits for
  // requests, runs collectives and touches shared vectors only after it; the stream's messages use tags on which
  // the caller has no pending receive. The default runs the body inside join(), once the caller has made its
  // posts: the same messages and results, no overlap, and join()'s time is the body's, charged to the body's
  // categories in this rank's breakdown (the analytic level; MPI below MPI_THREAD_SERIALIZED). The threads, MPI
  // and SimGrid executors overlap.
  virtual StreamPtr start_stream(StreamBody body);

  // Runs `kernels` -- this rank's own work that takes no simulated or charged time and touches only memory each
  // kernel owns (the parts of a test-set evaluation) -- and returns when all are done, rethrowing the first one's
  // error. The default runs them in turn; a numeric simulation with a pool of threads runs them side by side
  // (simulate/simgrid/kernel_pool.hpp). side_by_side() is how many can run at once: splitting work into more parts
  // gains nothing.
  virtual void run_side_by_side(std::span<const std::function<void()>> kernels);
  virtual int side_by_side() const { return 1; }

  // Starts `work` -- this rank's own memory only: no messages, no simulated or charged time -- beside what the rank
  // does next (seed 000's EASGD3 copies the next batch while the weights travel); get() on the future waits for it
  // and rethrows its error. The default runs it on a thread of its own. A simulation, whose clock never reads the
  // wall clock, defers it to the get(): a thread per rank and exchange cost 64 simulated ranks seconds of thread
  // start-up and page faults.
  virtual std::future<void> start_beside(std::function<void()> work);

  // Runs `work` -- this rank's set-up (its back end, network and buffers): its own memory only, no messages, no
  // simulated or charged time -- and returns when it is done, rethrowing its error. The default runs it here; a
  // numeric simulation with a pool of threads runs the set-ups of ranks starting at one simulated instant side by
  // side, as their processes would (without it 4 LeNet ranks spend a tenth of a short run building networks one
  // after another).
  virtual void set_up(const std::function<void()>& work) { work(); }

  // Collective: every worker calls it with the same name and count; the vector starts as rank 0's `initial`
  // (which may be empty for zeros). Returns the world's shared vector of that name.
  virtual std::shared_ptr<SharedVector> shared_vector(const std::string& name, std::size_t count,
                                                      std::span<const float> initial) = 0;

  // Collective: every rank calls it with equal options, outside a stream. Returns this rank's endpoint of an
  // unreliable, unordered channel among the world's ranks (core/datagram.hpp; docs/dogwild.md): natively on
  // threads in-process queues, on MPI UDP sockets on 127.0.0.1 (all ranks on one machine), in SimGrid datagrams over
  // the simulated network with bounded receive queues. The default throws UnavailableError naming the executor; the
  // analytic level refuses it as it refuses messages (its one rank stands for all).
  virtual std::shared_ptr<DatagramEndpoint> datagrams(const DatagramOptions& options);

  const Breakdown& breakdown() const { return breakdown_; }
  // Charges `seconds` to `category` (executors call this; algorithms may charge their own bookkeeping).
  void charge(Category category, double seconds) {
    breakdown_.add(category, seconds);
    charged(category, seconds);
  }
  // Bytes this rank has sent in messages, its part of collectives included: what it put on the wire. Shared-vector
  // traffic is not counted.
  std::uint64_t bytes_sent() const { return bytes_sent_; }
  // Adds a message's bytes to bytes_sent() (executors call this: each isend, and each rank's transfers in a
  // collective an executor runs as a whole).
  void count_sent(std::uint64_t bytes) { bytes_sent_ += bytes; }

 protected:
  // Called by charge(): the span [now - seconds, now] was spent in `category`. An executor may record it (the
  // SimGrid executor's timeline: SimulationOptions::trace_events).
  virtual void charged(Category /*category*/, double /*seconds*/) {}
  // node_of() of an executor holding a map of world.size entries.
  int node_in(const std::vector<int>& nodes, int rank) const;
  // Throws CommError unless 0 <= peer < size() (or peer is kAnySource where `any_allowed`).
  void check_peer(int peer, bool any_allowed, std::string_view operation) const;
  // compute() of the native executors: runs the step's kernel and charges its wall time to the step's category.
  void compute_on_wall_clock(const ComputeStep& step);

 private:
  Breakdown breakdown_;
  std::uint64_t bytes_sent_ = 0;
};

// One wording for the same failure on every executor (tests compare these strings across executors).
std::string seconds_text(double seconds);  // "60", "0.3"
std::string peer_text(int rank);           // "rank 3", or "any rank" for kAnySource
// "rank 1 expected 8 bytes from rank 0 (tag 3) but the message has 16 bytes"
std::string size_mismatch_text(int receiver, int source, Tag tag, std::size_t expected, std::size_t actual);
// "rank 1 waited 60 s " + what, e.g. what = "for a message from rank 0 (tag 7, 4096 bytes)"
std::string waited_text(int rank, double timeout_s, const std::string& what);
// "for a message from rank 0 (tag 7, 4096 bytes)"
std::string awaited_message_text(int source, Tag tag, std::size_t bytes);

// What every executor's world takes.
struct WorldOptions {
  int size = 1;
  double timeout_s = 60;  // for every blocking wait
  bool payload = true;    // simulation only: false runs size-only (no buffers, no kernels)
  // > 0: Comm::node_of groups ranks into nodes of this many (the last may hold fewer), whatever the hardware, so
  // node-aware collectives can be exercised on one machine; 0: each executor's own map (Comm::node_of).
  int ranks_per_node = 0;
};

// The node map of `world` where its ranks_per_node is set: rank r on node r / ranks_per_node; empty otherwise.
std::vector<int> emulated_nodes(const WorldOptions& world);

// Throws InputError unless `world` can run on `executor` ("threads", "mpi", "simgrid"), in one wording for all: at
// least one rank; a timeout > 0, which only a simulation (`simulated`) may make infinite (no wait ends then but a
// deadlock); payloads, unless simulated.
void check_world(const WorldOptions& world, std::string_view executor, bool simulated);

// The body of a worker: called once per rank, on its own thread / process / actor.
using WorkerFunction = std::function<void(Comm&)>;

}  // namespace dsgd
