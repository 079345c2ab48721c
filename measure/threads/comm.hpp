#pragma once
// One worker's Comm in the threads executor, and the hub the workers of a world share.
//
// Matching follows MPI (core/matching.hpp): a receive is posted to the receiver's mailbox; a send first looks for a
// posted receive that accepts it, else queues as an unexpected message; a receive first looks at the unexpected
// messages. Sends are eager: the payload is copied at once and the send completes, as MPI's eager protocol does for
// small messages.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/matching.hpp"

namespace dsgd::measure::threads {

class Hub;

class ThreadsComm final : public Comm {
 public:
  ThreadsComm(Hub& hub, int rank);

  int rank() const override { return rank_; }
  int size() const override;
  double now_s() const override;
  std::string_view executor() const override { return "threads"; }
  bool has_payload() const override { return true; }
  // All ranks on node 0, unless WorldOptions::ranks_per_node groups them.
  int node_of(int rank) const override;

  RequestPtr isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) override;
  RequestPtr irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) override;
  void compute(const ComputeStep& step) override;
  // A thread with a second ThreadsComm of this rank: the mailboxes are locked, so the two may both use them.
  StreamPtr start_stream(StreamBody body) override;
  // The world's in-process channel (core/datagram.hpp InProcessDatagrams), made by rank 0.
  std::shared_ptr<DatagramEndpoint> datagrams(const DatagramOptions& options) override;
  std::shared_ptr<SharedVector> shared_vector(const std::string& name, std::size_t count,
                                              std::span<const float> initial) override;

 private:
  Hub& hub_;
  int rank_;
};

// A receive waiting in a mailbox, filled by a matching send.
struct PostedReceive {
  int source = kAnySource;
  Tag tag = 0;
  void* data = nullptr;
  std::size_t bytes = 0;
  bool done = false;
  Status status;
  std::string error;  // set instead of data on a size mismatch
};

struct Mailbox {
  std::mutex mutex;
  std::condition_variable arrived;
  // Posted receives and unexpected messages' payloads.
  MatchQueues<std::shared_ptr<PostedReceive>, std::vector<std::byte>> queues;
};

// The state the workers of one world share.
class Hub {
 public:
  explicit Hub(const WorldOptions& options);

  const WorldOptions& options() const { return options_; }
  const std::vector<int>& nodes() const { return nodes_; }
  double now_s() const;
  Mailbox& mailbox(int rank) { return *mailboxes_[static_cast<std::size_t>(rank)]; }
  std::chrono::steady_clock::time_point deadline() const;

  // Wakes every waiting worker and makes its wait fail with `reason`.
  void abort(const std::string& reason);
  bool aborted() const;
  std::string abort_reason() const;

  // Blocks until all workers arrived (or timeout / abort). `what` names the operation in errors.
  void barrier(int rank, const std::string& what);

  std::shared_ptr<SharedVector> shared_vector(int rank, const std::string& name, std::size_t count,
                                              std::span<const float> initial);
  // Collective: rank 0 makes the world's in-process channel, every rank gets its endpoint (which keeps it alive).
  std::shared_ptr<DatagramEndpoint> datagrams(int rank, const DatagramOptions& options);

 private:
  WorldOptions options_;
  std::vector<int> nodes_;  // per rank
  std::chrono::steady_clock::time_point start_;
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;

  mutable std::mutex state_mutex_;
  std::condition_variable state_changed_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
  int barrier_arrived_ = 0;
  long barrier_generation_ = 0;
  std::map<std::string, std::shared_ptr<SharedVector>> shared_;
  std::shared_ptr<InProcessDatagrams> datagrams_;  // the last channel rank 0 made
};

}  // namespace dsgd::measure::threads
