#pragma once
// One rank's Comm in the MPI executor: dsgd's messages are MPI messages on a private duplicate of the world
// communicator, compute steps run the real kernel under a wall clock. Parallel to measure/threads/comm.hpp and
// simulate/simgrid/comm.hpp. Only targets that link OpenMPI (dsgd::measure_mpi) may include this header: libsimgrid
// defines MPI_* too (docs/design.md "Executors").
//
// How the semantics of core/comm.hpp map onto MPI:
//  * isend is MPI_Isend of MPI_BYTE; dsgd tags are MPI tags (0 <= tag <= MPI_TAG_UB, else CommError); kAnySource
//    is MPI_ANY_SOURCE; MPI's non-overtaking rule is core's ordering rule.
//  * irecv does not post an MPI_Irecv. It queues the receive, and every wait of this comm matches queued receives
//    to arrived messages with MPI_Improbe, in posting order and by MPI's rule (a message goes to the earliest
//    posted receive it matches), then receives the message with MPI_Imrecv. So the message's size is known before
//    any byte lands: a message of another size than declared is received into a scratch buffer and becomes a
//    CommError naming both sizes. (Posting MPI_Irecv with the declared size and relying on MPI_ERR_TRUNCATE is not
//    safe here: Open MPI 4.1.4's shared-memory rendezvous with CMA single copy writes a longer message past the
//    end of the receive buffer.) The cost is one extra copy of eager messages (<= 4 KiB here), which arrive before
//    their receive is posted.
//  * Every wait polls (MPI_Test, MPI_Improbe) until the world's timeout, then throws TimeoutError naming both ranks,
//    the tag and the size; a timed-out receive leaves the queue, a timed-out send is cancelled if MPI can (Open
//    MPI's ob1 cannot: the message may still be delivered later). MPI's blocking calls could not be given a
//    deadline.
//  * The duplicate communicator has MPI_ERRORS_RETURN, so MPI failures become CommError instead of aborting.
//  * shared_vector is an MPI RMA window on rank 0; see MpiComm::shared_vector for its semantics.
//  * Requests refer to their MpiComm and must not outlive it. One thread per MpiComm. A stream (start_stream) is a
//    thread with a sibling MpiComm on the same communicator, whose receives it matches itself; while it runs the
//    main thread makes no MPI call (core/comm.hpp), so MPI_THREAD_SERIALIZED suffices.

#include <mpi.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/collectives.hpp"
#include "core/comm.hpp"

namespace dsgd::measure::mpi {

struct SharedWindow;

class MpiComm final : public Comm {
 public:
  // Collective over `parent`: duplicates it, sets MPI_ERRORS_RETURN on the duplicate, waits for every rank and
  // starts the clock. options.size <= 1 accepts whatever size `parent` has; a larger value must equal it.
  // options.payload must be true (MPI always carries payloads) and options.timeout_s positive. Throws InputError
  // for such options, CommError on an MPI failure.
  MpiComm(MPI_Comm parent, const WorldOptions& options);
  // Frees the shared vectors' windows (collective, in creation order) and the duplicate communicator, unless
  // abandon() was called.
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Seconds since the constructor's synchronisation (MPI_Wtime offset).
  double now_s() const override;
  std::string_view executor() const override { return "mpi"; }
  bool has_payload() const override { return true; }
  // The shared-memory nodes (MPI_COMM_TYPE_SHARED), numbered 0, 1, ... in the order of their lowest rank, unless
  // WorldOptions::ranks_per_node groups the ranks.
  int node_of(int rank) const override { return node_in(nodes_, rank); }

  RequestPtr isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) override;
  RequestPtr irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) override;
  // Runs step.kernel (if any) and charges its wall time to step.category.
  void compute(const ComputeStep& step) override;
  // A thread with a sibling MpiComm where MPI gives MPI_THREAD_SERIALIZED or more, else Comm's sequential default.
  StreamPtr start_stream(StreamBody body) override;

  // A window of `count` floats in rank 0's memory (MPI_Win_allocate, so MPI may place it in shared memory; tested
  // here with Open MPI's osc components sm, rdma and pt2pt), opened once with MPI_Win_lock_all. read() is MPI_Rget +
  // flush; add() is MPI_Raccumulate(MPI_SUM) + flush. MPI's accumulate is atomic per element, so unlike the threads
  // executor no update is ever lost: this is how lock-free updates are done across processes (one-sided accumulate is
  // what a distributed Hogwild/ASGD uses), and core/comm.hpp allows it ("may" lose). Concurrent add()s still interleave
  // element by element, and read() gives no snapshot across elements. Collective; throws CommError if the ranks ask
  // for different counts. The vector must not be used after this MpiComm is destroyed (CommError).
  // UDP sockets on 127.0.0.1 (measure/udp/): the ranks' ports exchanged over MPI. Refused (UnavailableError) where
  // the ranks do not share one machine.
  std::shared_ptr<DatagramEndpoint> datagrams(const DatagramOptions& options) override;
  std::shared_ptr<SharedVector> shared_vector(const std::string& name, std::size_t count,
                                              std::span<const float> initial) override;

  // Waits until every rank has arrived (MPI_Ibarrier polled under the timeout); charges the wait to `category`.
  void barrier(Category category = Category::kWait);

  // Polls `request` (which this comm started) until it completes or the world's timeout passes. Returns MPI's error
  // code for the completed request (MPI_SUCCESS or the request's error), or nullopt if it timed out: then the
  // request has been cancelled (or freed, if MPI would not cancel it). Charges nothing.
  std::optional<int> try_wait(MPI_Request& request, MPI_Status& status);
  // try_wait, charging the time to `category` and throwing TimeoutError("rank R waited T s " + what) on timeout,
  // CommError on an MPI error.
  void wait_for(MPI_Request& request, MPI_Status& status, Category category, const std::string& what);
  // Throws TimeoutError("rank R waited T s " + what).
  [[noreturn]] void throw_timeout(const std::string& what) const;

  // After this rank's worker failed: the destructor skips the collective cleanup (freeing windows), which would
  // wait for ranks that may never arrive. The process is about to end (app/ calls MPI_Abort).
  void abandon() { abandoned_ = true; }

  MPI_Comm handle() const { return comm_; }
  double timeout_s() const { return timeout_s_; }
  // More ranks on this node than CPUs to run them: waits then sleep between polls from the start instead of
  // spinning first (comm.cpp says why).
  bool oversubscribed() const { return oversubscribed_; }
  int node_ranks() const { return node_ranks_; }

 private:
  struct PostedReceive;
  class ReceiveRequest;

  // Every rank's node, numbered by the lowest rank of each `node` communicator (collective over comm_).
  std::vector<int> shared_memory_nodes(MPI_Comm node);
  // Matches queued receives to arrived messages (MPI's rule) and starts their MPI_Imrecv.
  void match_receives();
  // Polls until done() returns true (true) or the timeout passes (false), matching receives meanwhile.
  template <typename Done>
  bool poll(Done&& done);

  struct SiblingOf {};
  // A stream's comm: the parent's communicator, rank and clock, its own receive queue and breakdown; frees nothing.
  MpiComm(const MpiComm& parent, SiblingOf);

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool sibling_ = false;
  int rank_ = 0;
  int size_ = 1;
  int tag_upper_bound_ = 32767;  // the MPI standard's minimum; the constructor reads the real one
  double timeout_s_ = 60;
  double start_ = 0;  // MPI_Wtime at the constructor's barrier
  bool abandoned_ = false;
  int node_ranks_ = 1;
  std::vector<int> nodes_;  // per rank
  bool oversubscribed_ = false;
  std::deque<std::shared_ptr<PostedReceive>> unmatched_;  // receives without a message yet, in posting order
  std::vector<std::shared_ptr<SharedWindow>> windows_;
};

// Throws CommError("rank R: <what>: <MPI's error string>") unless code == MPI_SUCCESS.
void check_mpi(int code, int rank, const std::string& what);

// MPI's own collectives on the same communicator, for comparison with core/collectives.hpp (in place, MPI_SUM of
// MPI_FLOAT; for reduce, non-root buffers are left as they were, as in core's reduce). These are MPI's blocking
// calls, kept blocking so the comparison is with what MPI users run: they have no timeout. The wall time is
// charged to `category`. Throws CommError on an MPI error or a count beyond MPI's int.
void mpi_allreduce(MpiComm& comm, Floats buffer, Category category = Category::kGpuGpuPara);
void mpi_reduce(MpiComm& comm, Floats buffer, int root, Category category = Category::kGpuGpuPara);
void mpi_broadcast(MpiComm& comm, Floats buffer, int root, Category category = Category::kGpuGpuPara);

// "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line), for labels and results.
std::string mpi_library_version();

}  // namespace dsgd::measure::mpi
