#include "measure/threads/comm.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/stopwatch.hpp"
#include "core/thread_stream.hpp"

namespace dsgd::measure::threads {

namespace {

// Fills a posted receive from a message (or records the size mismatch for the receiver to throw).
void deliver(PostedReceive& receive, int receiver, int source, Tag tag, const std::byte* data, std::size_t bytes) {
  receive.status = {source, tag, bytes};
  if (bytes != receive.bytes) {
    receive.error = size_mismatch_text(receiver, source, tag, receive.bytes, bytes);
  } else if (bytes > 0) {
    std::memcpy(receive.data, data, bytes);
  }
  receive.done = true;
}

// A send: eager, so it is complete when created; wait() only charges the time.
class SendRequest final : public Request {
 public:
  explicit SendRequest(Status status) : status_(status) {}
  Status wait() override { return status_; }

 private:
  Status status_;
};

class ReceiveRequest final : public Request {
 public:
  ReceiveRequest(Hub& hub, ThreadsComm& comm, std::shared_ptr<PostedReceive> posted, Category category)
      : hub_(hub), comm_(comm), posted_(std::move(posted)), category_(category) {}
  ~ReceiveRequest() override { finish_unwaited(*this, waited_); }

  Status wait() override {
    if (waited_) return posted_->status;
    waited_ = true;
    const auto start = std::chrono::steady_clock::now();
    Mailbox& box = hub_.mailbox(comm_.rank());
    std::unique_lock lock(box.mutex);
    const bool ready = box.arrived.wait_until(lock, hub_.deadline(), [&] { return posted_->done || hub_.aborted(); });
    comm_.charge(category_, seconds_since(start));
    if (!posted_->done) {
      box.queues.withdraw(posted_);
      if (hub_.aborted()) {
        throw CommError("rank " + std::to_string(comm_.rank()) + " stopped waiting for a message from " +
                        peer_text(posted_->source) + ": " + hub_.abort_reason());
      }
      (void)ready;
      throw TimeoutError(waited_text(comm_.rank(), hub_.options().timeout_s,
                                     awaited_message_text(posted_->source, posted_->tag, posted_->bytes)));
    }
    if (!posted_->error.empty()) throw CommError(posted_->error);
    return posted_->status;
  }

 private:
  Hub& hub_;
  ThreadsComm& comm_;
  std::shared_ptr<PostedReceive> posted_;
  Category category_;
  bool waited_ = false;
};

// Hogwild's shared model: every element a relaxed atomic, so concurrent adds may lose updates (a load and a
// store, not a fetch_add) but never race.
class ThreadsSharedVector final : public SharedVector {
 public:
  ThreadsSharedVector(std::size_t count, std::span<const float> initial) : values_(count) {
    for (std::size_t i = 0; i < count; ++i)
      values_[i].store(i < initial.size() ? initial[i] : 0.0F, std::memory_order_relaxed);
  }
  std::size_t size() const override { return values_.size(); }
  void read(std::size_t offset, std::span<float> out, Category) override {
    check(offset, out.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = values_[offset + i].load(std::memory_order_relaxed);
  }
  void add(std::size_t offset, std::span<const float> delta, float scale, Category) override {
    check(offset, delta.size());
    for (std::size_t i = 0; i < delta.size(); ++i) {
      auto& value = values_[offset + i];
      value.store(value.load(std::memory_order_relaxed) + scale * delta[i], std::memory_order_relaxed);
    }
  }

 private:
  void check(std::size_t offset, std::size_t count) const {
    if (offset + count > values_.size()) {
      throw CommError("shared vector access [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                      ") is out of range [0, " + std::to_string(values_.size()) + ")");
    }
  }
  std::vector<std::atomic<float>> values_;
};

// One rank's handle on a shared vector: the storage is the world's, the time goes to this rank's categories.
class ChargedSharedVector final : public SharedVector {
 public:
  ChargedSharedVector(std::shared_ptr<SharedVector> storage, Comm& comm) : storage_(std::move(storage)), comm_(comm) {}
  std::size_t size() const override { return storage_->size(); }
  void read(std::size_t offset, std::span<float> out, Category category) override {
    const auto start = std::chrono::steady_clock::now();
    storage_->read(offset, out, category);
    comm_.charge(category, seconds_since(start));
  }
  void add(std::size_t offset, std::span<const float> delta, float scale, Category category) override {
    const auto start = std::chrono::steady_clock::now();
    storage_->add(offset, delta, scale, category);
    comm_.charge(category, seconds_since(start));
  }

 private:
  std::shared_ptr<SharedVector> storage_;
  Comm& comm_;
};

}  // namespace

// --- Hub ------------------------------------------------------------------------------------------------------

Hub::Hub(const WorldOptions& options)
    : options_(options), nodes_(emulated_nodes(options)), start_(std::chrono::steady_clock::now()) {
  if (nodes_.empty()) nodes_.assign(static_cast<std::size_t>(options.size), 0);
  for (int i = 0; i < options.size; ++i) mailboxes_.push_back(std::make_unique<Mailbox>());
}

double Hub::now_s() const { return seconds_since(start_); }

std::chrono::steady_clock::time_point Hub::deadline() const {
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double>(options_.timeout_s));
}

void Hub::abort(const std::string& reason) {
  {
    std::lock_guard lock(state_mutex_);
    if (aborted_) return;
    abort_reason_ = reason;
    aborted_ = true;
  }
  state_changed_.notify_all();
  for (auto& box : mailboxes_) {
    std::lock_guard lock(box->mutex);  // so no waiter misses the flag between its check and its sleep
    box->arrived.notify_all();
  }
}

bool Hub::aborted() const { return aborted_.load(); }

std::string Hub::abort_reason() const {
  std::lock_guard lock(state_mutex_);
  return abort_reason_;
}

void Hub::barrier(int rank, const std::string& what) {
  std::unique_lock lock(state_mutex_);
  const long generation = barrier_generation_;
  if (++barrier_arrived_ == options_.size) {
    barrier_arrived_ = 0;
    ++barrier_generation_;
    state_changed_.notify_all();
    return;
  }
  const bool passed =
      state_changed_.wait_until(lock, deadline(), [&] { return barrier_generation_ != generation || aborted_; });
  if (aborted_) throw CommError("rank " + std::to_string(rank) + " stopped waiting in " + what + ": " + abort_reason_);
  if (!passed) {
    throw TimeoutError(waited_text(rank, options_.timeout_s, "in " + what) + " for all " +
                       std::to_string(options_.size) + " ranks");
  }
}

std::shared_ptr<SharedVector> Hub::shared_vector(int rank, const std::string& name, std::size_t count,
                                                 std::span<const float> initial) {
  if (rank == 0) {
    std::lock_guard lock(state_mutex_);
    shared_[name] = std::make_shared<ThreadsSharedVector>(count, initial);
  }
  barrier(rank, "shared_vector('" + name + "')");  // rank 0 has created it; nobody reads before that
  std::shared_ptr<SharedVector> vector;
  {
    std::lock_guard lock(state_mutex_);
    vector = shared_.at(name);
  }
  if (vector->size() != count) {
    throw CommError("rank " + std::to_string(rank) + ": shared_vector('" + name + "') asked for " +
                    std::to_string(count) + " floats, rank 0 created " + std::to_string(vector->size()));
  }
  return vector;
}

std::shared_ptr<DatagramEndpoint> Hub::datagrams(int rank, const DatagramOptions& options) {
  if (rank == 0) {
    std::lock_guard lock(state_mutex_);
    datagrams_ = std::make_shared<InProcessDatagrams>(options_.size, options.queue_datagrams, injected_loss(options));
  }
  barrier(rank, "datagrams");
  std::shared_ptr<InProcessDatagrams> channel;
  {
    std::lock_guard lock(state_mutex_);
    channel = datagrams_;
  }
  barrier(rank, "datagrams");  // every rank holds the channel before rank 0 may replace it
  return {channel, &channel->endpoint(rank)};
}

// --- ThreadsComm ----------------------------------------------------------------------------------------------

ThreadsComm::ThreadsComm(Hub& hub, int rank) : hub_(hub), rank_(rank) {}

int ThreadsComm::size() const { return hub_.options().size; }

int ThreadsComm::node_of(int rank) const { return node_in(hub_.nodes(), rank); }

double ThreadsComm::now_s() const { return hub_.now_s(); }

RequestPtr ThreadsComm::isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) {
  check_peer(destination, false, "send to");
  if (data == nullptr && bytes > 0)
    throw CommError("rank " + std::to_string(rank_) + ": send of " + std::to_string(bytes) + " bytes without data");
  count_sent(bytes);
  const auto start = std::chrono::steady_clock::now();
  const auto* bytes_in = static_cast<const std::byte*>(data);
  Mailbox& box = hub_.mailbox(destination);
  {
    std::lock_guard lock(box.mutex);
    if (const auto receive = box.queues.match_arrival({rank_, tag})) {
      deliver(**receive, destination, rank_, tag, bytes_in, bytes);
    } else {
      box.queues.add_unexpected({rank_, tag}, std::vector<std::byte>(bytes_in, bytes_in + bytes));
    }
  }
  box.arrived.notify_all();
  charge(category, seconds_since(start));
  return std::make_unique<SendRequest>(Status{destination, tag, bytes});
}

RequestPtr ThreadsComm::irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) {
  check_peer(source, true, "receive from");
  if (data == nullptr && bytes > 0)
    throw CommError("rank " + std::to_string(rank_) + ": receive of " + std::to_string(bytes) +
                    " bytes without a buffer");
  auto posted = std::make_shared<PostedReceive>();
  posted->source = source;
  posted->tag = tag;
  posted->data = data;
  posted->bytes = bytes;
  Mailbox& box = hub_.mailbox(rank_);
  {
    std::lock_guard lock(box.mutex);
    if (const auto arrived = box.queues.match_receive({source, tag})) {
      const auto& [envelope, payload] = *arrived;
      deliver(*posted, rank_, envelope.source, tag, payload.data(), payload.size());
    } else {
      box.queues.add_posted({source, tag}, posted);
    }
  }
  return std::make_unique<ReceiveRequest>(hub_, *this, std::move(posted), category);
}

void ThreadsComm::compute(const ComputeStep& step) { compute_on_wall_clock(step); }

StreamPtr ThreadsComm::start_stream(StreamBody body) {
  return start_thread_stream(*this, std::make_unique<ThreadsComm>(hub_, rank_), std::move(body),
                             hub_.options().timeout_s);
}

std::shared_ptr<DatagramEndpoint> ThreadsComm::datagrams(const DatagramOptions& options) {
  return hub_.datagrams(rank_, options);
}

std::shared_ptr<SharedVector> ThreadsComm::shared_vector(const std::string& name, std::size_t count,
                                                         std::span<const float> initial) {
  // The time of every access is charged to this rank.
  return std::make_shared<ChargedSharedVector>(hub_.shared_vector(rank_, name, count, initial), *this);
}

}  // namespace dsgd::measure::threads
