#include "measure/mpi/comm.hpp"

#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <thread>

#include "core/collectives.hpp"
#include "core/stopwatch.hpp"
#include "core/thread_stream.hpp"
#include "measure/udp/udp_datagrams.hpp"

namespace dsgd::measure::mpi {

namespace {

using Clock = std::chrono::steady_clock;

std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

// MPI counts are ints; dsgd sizes are size_t. `what` names the thing and its unit ("a message of", "bytes").
int to_count(std::size_t count, int rank, const char* what, const char* unit) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw CommError(rank_text(rank) + ": " + what + " " + std::to_string(count) + " " + unit +
                    " exceeds MPI's int count limit of " + std::to_string(INT_MAX));
  }
  return static_cast<int>(count);
}

// How often the wait loop looks at the clock, after how long it stops spinning, and how long it then sleeps between
// polls. Ranks may outnumber cores here (a master and a worker per core), and a rank that spins or merely yields
// stays runnable and takes CPU from the ranks computing; one that sleeps between polls takes almost none. A wait that
// outlasted the spin waits for computation, not for a transfer, so the up to ~0.1 ms a sleep adds to it is small.
// With more ranks on the node than CPUs, even the spin holds a core that the very rank it waits for may need, so an
// oversubscribed rank sleeps from its first unsuccessful polls, like Open MPI's mpi_yield_when_idle, which it also
// turns on when oversubscribed (docs/validation.md "More ranks than cores"; the measurements: docs/validation-log.md).
constexpr int kPollsPerClockCheck = 16;
constexpr double kSpinBeforeSleep_s = 1e-3;
constexpr auto kSleepBetweenPolls = std::chrono::microseconds(50);
// The timer slack a waiting rank asks for. Linux lets a sleep overrun by the thread's slack, 50 us by default, which
// made a 50 us sleep take about three times as long (docs/validation-log.md "Exchanges as training makes them").
constexpr unsigned long kTimerSlack_ns = 1000;

// CPUs this process may run on (its affinity mask); 0 if unknown.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// How long a timed-out request gets to acknowledge its cancellation before it is freed unfinished (receives cancel
// at once; Open MPI's ob1 never cancels a send, which may still be delivered later).
constexpr double kCancelGrace_s = 0.1;

// A send: MPI_Isend's request.
class SendRequest final : public Request {
 public:
  SendRequest(MpiComm& comm, MPI_Request request, int destination, Tag tag, std::size_t bytes, Category category)
      : comm_(comm), request_(request), destination_(destination), tag_(tag), bytes_(bytes), category_(category) {}
  ~SendRequest() override { finish_unwaited(*this, waited_); }

  Status wait() override {
    if (waited_) return {destination_, tag_, bytes_};
    waited_ = true;
    MPI_Status status{};
    const auto start = Clock::now();
    const std::optional<int> code = comm_.try_wait(request_, status);
    comm_.charge(category_, seconds_since(start));
    if (!code) {
      // Formatted only now: building it on every wait would cost more than a small message does.
      comm_.throw_timeout("for " + rank_text(destination_) + " to receive a message (tag " + std::to_string(tag_) +
                          ", " + std::to_string(bytes_) + " bytes)");
    }
    if (*code != MPI_SUCCESS) {
      check_mpi(*code, comm_.rank(), "send to " + rank_text(destination_) + " (tag " + std::to_string(tag_) + ")");
    }
    return {destination_, tag_, bytes_};
  }

 private:
  MpiComm& comm_;
  MPI_Request request_;
  int destination_;
  Tag tag_;
  std::size_t bytes_;
  Category category_;
  bool waited_ = false;
};

}  // namespace

// --- shared vectors -------------------------------------------------------------------------------------------

// One RMA window, owned by the comm that created it (freeing it is collective, so the comm does it for all ranks in
// the same order); the SharedVector handed to the algorithm refers to it.
struct SharedWindow {
  MpiComm* comm = nullptr;  // null once the comm has freed the window
  MPI_Win win = MPI_WIN_NULL;
  std::string name;
  std::size_t count = 0;
};

namespace {

class MpiSharedVector final : public SharedVector {
 public:
  explicit MpiSharedVector(std::shared_ptr<SharedWindow> window) : window_(std::move(window)) {}

  std::size_t size() const override { return window_->count; }

  void read(std::size_t offset, std::span<float> out, Category category) override {
    MpiComm& comm = check(offset, out.size(), "read");
    if (out.empty()) return;
    const auto start = Clock::now();
    const int count = to_count(out.size(), comm.rank(), "a shared-vector read of", "floats");
    MPI_Request request = MPI_REQUEST_NULL;
    if (const int code = MPI_Rget(out.data(), count, MPI_FLOAT, 0, static_cast<MPI_Aint>(offset), count, MPI_FLOAT,
                                  window_->win, &request);
        code != MPI_SUCCESS) {
      check_mpi(code, comm.rank(), "MPI_Rget from shared vector '" + window_->name + "'");
    }
    finish(comm, request, "read");
    comm.charge(category, seconds_since(start));
  }

  void add(std::size_t offset, std::span<const float> delta, float scale, Category category) override {
    MpiComm& comm = check(offset, delta.size(), "add");
    if (delta.empty()) return;
    const auto start = Clock::now();
    scaled_.resize(delta.size());
    std::transform(delta.begin(), delta.end(), scaled_.begin(), [scale](float d) { return scale * d; });
    const int count = to_count(delta.size(), comm.rank(), "a shared-vector add of", "floats");
    MPI_Request request = MPI_REQUEST_NULL;
    if (const int code = MPI_Raccumulate(scaled_.data(), count, MPI_FLOAT, 0, static_cast<MPI_Aint>(offset), count,
                                         MPI_FLOAT, MPI_SUM, window_->win, &request);
        code != MPI_SUCCESS) {
      check_mpi(code, comm.rank(), "MPI_Raccumulate into shared vector '" + window_->name + "'");
    }
    finish(comm, request, "add");
    comm.charge(category, seconds_since(start));
  }

 private:
  MpiComm& check(std::size_t offset, std::size_t count, const char* operation) const {
    if (window_->comm == nullptr) {
      throw CommError("shared vector '" + window_->name + "': " + operation + " after its MPI world was closed");
    }
    if (offset > window_->count || count > window_->count - offset) {
      throw CommError(rank_text(window_->comm->rank()) + ": shared vector '" + window_->name + "' " + operation + " [" +
                      std::to_string(offset) + ", " + std::to_string(offset + count) + ") is out of range [0, " +
                      std::to_string(window_->count) + ")");
    }
    return *window_->comm;
  }

  // Waits (under the timeout) for local completion, then flushes so the access is complete at rank 0 too: an
  // add() is visible to every later read(), as it is natively.
  void finish(MpiComm& comm, MPI_Request& request, const char* operation) {
    MPI_Status status{};
    const std::optional<int> code = comm.try_wait(request, status);
    if (!code) {
      comm.throw_timeout(std::string("for rank 0 in a ") + operation + " of shared vector '" + window_->name + "'");
    }
    if (*code != MPI_SUCCESS) {
      check_mpi(*code, comm.rank(), std::string(operation) + " of shared vector '" + window_->name + "'");
    }
    if (const int flushed = MPI_Win_flush(0, window_->win); flushed != MPI_SUCCESS) {
      check_mpi(flushed, comm.rank(), "MPI_Win_flush of shared vector '" + window_->name + "'");
    }
  }

  std::shared_ptr<SharedWindow> window_;
  std::vector<float> scaled_;
};

}  // namespace

// --- receives -------------------------------------------------------------------------------------------------

// A receive from irecv: queued until a message matches it, then an MPI_Imrecv of that message.
struct MpiComm::PostedReceive {
  int source = 0;  // or kAnySource
  Tag tag = 0;
  void* data = nullptr;
  std::size_t bytes = 0;  // declared
  bool matched = false;
  MPI_Request request = MPI_REQUEST_NULL;  // the MPI_Imrecv, once matched
  int message_source = 0;
  std::size_t message_bytes = 0;
  int error = MPI_SUCCESS;         // MPI_Imrecv's, reported by this receive's wait rather than another's
  std::vector<std::byte> discard;  // takes a message of the wrong size, so it leaves MPI's queue

  bool matches(int from, Tag with) const { return tag == with && (source == kAnySource || source == from); }
};

void MpiComm::match_receives() {
  for (std::size_t i = 0; i < unmatched_.size();) {
    const PostedReceive& probe = *unmatched_[i];
    int found = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status{};
    int code = MPI_Improbe(probe.source == kAnySource ? MPI_ANY_SOURCE : probe.source, probe.tag, comm_, &found,
                           &message, &status);
    if (code != MPI_SUCCESS) check_mpi(code, rank_, "MPI_Improbe for " + peer_text(probe.source));
    if (!found) {
      ++i;
      continue;
    }
    // MPI's rule: the message goes to the earliest posted receive it matches. That may be an earlier receive than
    // this one, if the message arrived after that receive's probe.
    std::size_t j = 0;
    while (!unmatched_[j]->matches(status.MPI_SOURCE, probe.tag)) ++j;  // stops at i at the latest
    const std::shared_ptr<PostedReceive> receive = unmatched_[j];
    unmatched_.erase(unmatched_.begin() + static_cast<std::ptrdiff_t>(j));
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    receive->matched = true;
    receive->message_source = status.MPI_SOURCE;
    receive->message_bytes = static_cast<std::size_t>(count);
    void* into = receive->data;
    if (receive->message_bytes != receive->bytes) {
      receive->discard.resize(receive->message_bytes);
      into = receive->discard.data();
    }
    receive->error = MPI_Imrecv(into, count, MPI_BYTE, &message, &receive->request);
    i = j;  // the receives from j on have moved up one place; probe them again
  }
}

template <typename Done>
bool MpiComm::poll(Done&& done) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  const auto sleep_after = start + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(oversubscribed_ ? 0.0 : kSpinBeforeSleep_s));
  for (long polls = 1;; ++polls) {
    // Matching queued receives on every wait is what MPI's progress does for posted receives: a rank waiting for
    // its send still takes in the messages sent to it, so exchanges cannot deadlock.
    if (!unmatched_.empty()) match_receives();
    if (done()) return true;
    if (polls % kPollsPerClockCheck != 0) continue;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now >= sleep_after) std::this_thread::sleep_for(kSleepBetweenPolls);
  }
}

class MpiComm::ReceiveRequest final : public Request {
 public:
  ReceiveRequest(MpiComm& comm, std::shared_ptr<PostedReceive> posted, Category category)
      : comm_(comm), posted_(std::move(posted)), category_(category) {}
  ~ReceiveRequest() override { finish_unwaited(*this, waited_); }

  Status wait() override {
    PostedReceive& posted = *posted_;
    if (waited_) return {posted.message_source, posted.tag, posted.bytes};
    waited_ = true;
    const auto start = Clock::now();
    MPI_Status status{};
    int code = MPI_SUCCESS;
    const bool done = comm_.poll([&] {
      if (!posted.matched) return false;
      if (posted.error != MPI_SUCCESS) {
        code = posted.error;
        return true;
      }
      int flag = 0;
      code = MPI_Test(&posted.request, &flag, &status);
      return code != MPI_SUCCESS || flag != 0;
    });
    comm_.charge(category_, seconds_since(start));
    if (!done) {
      give_up();
      comm_.throw_timeout(awaited_message_text(posted.source, posted.tag, posted.bytes));
    }
    if (code != MPI_SUCCESS) {
      check_mpi(code, comm_.rank(),
                "receive from " + peer_text(posted.source) + " (tag " + std::to_string(posted.tag) + ")");
    }
    if (posted.message_bytes != posted.bytes) {
      throw CommError(
          size_mismatch_text(comm_.rank(), posted.message_source, posted.tag, posted.bytes, posted.message_bytes));
    }
    return {posted.message_source, posted.tag, posted.bytes};
  }

 private:
  // After a timeout: an unmatched receive just leaves the queue; a matched one whose transfer is stuck is
  // cancelled, or freed if MPI will not cancel it.
  void give_up() {
    PostedReceive& posted = *posted_;
    if (!posted.matched) {
      std::erase(comm_.unmatched_, posted_);
      return;
    }
    MPI_Cancel(&posted.request);
    const auto grace_end =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kCancelGrace_s));
    int flag = 0;
    while (!flag && Clock::now() < grace_end) {
      if (MPI_Test(&posted.request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
    }
    if (!flag && posted.request != MPI_REQUEST_NULL) MPI_Request_free(&posted.request);
  }

  MpiComm& comm_;
  std::shared_ptr<PostedReceive> posted_;
  Category category_;
  bool waited_ = false;
};

// --- MpiComm --------------------------------------------------------------------------------------------------

void check_mpi(int code, int rank, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw CommError(
      rank_text(rank) + ": " + what + ": " +
      (length > 0 ? std::string(text, static_cast<std::size_t>(length)) : "MPI error " + std::to_string(code)));
}

MpiComm::MpiComm(MPI_Comm parent, const WorldOptions& options) : timeout_s_(options.timeout_s) {
  int parent_rank = 0;
  MPI_Comm_rank(parent, &parent_rank);
  check_world(options, "mpi", /*simulated=*/false);
  check_mpi(MPI_Comm_dup(parent, &comm_), parent_rank, "MPI_Comm_dup");
  try {
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), parent_rank, "MPI_Comm_set_errhandler");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (options.size > 1 && options.size != size_) {
      throw InputError("mpi executor: the world was asked for " + std::to_string(options.size) +
                       " ranks but mpirun started " + std::to_string(size_));
    }
    void* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found);
    if (found && value != nullptr) tag_upper_bound_ = *static_cast<int*>(value);
    // Ranks sharing this node (its shared-memory communicator) against the CPUs they may use.
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), rank_, "MPI_Comm_split_type");
    MPI_Comm_size(node, &node_ranks_);
    WorldOptions world = options;
    world.size = size_;
    nodes_ = emulated_nodes(world);
    if (nodes_.empty()) {
      try {
        nodes_ = shared_memory_nodes(node);
      } catch (...) {
        MPI_Comm_free(&node);
        throw;
      }
    }
    MPI_Comm_free(&node);
    const int cpus = usable_cpus();
    oversubscribed_ = cpus > 0 && node_ranks_ > cpus;
    ::prctl(PR_SET_TIMERSLACK, kTimerSlack_ns);
    barrier(Category::kWait);
    start_ = MPI_Wtime();
  } catch (...) {
    MPI_Comm_free(&comm_);
    throw;
  }
}

MpiComm::MpiComm(const MpiComm& parent, SiblingOf)
    : comm_(parent.comm_),
      sibling_(true),
      rank_(parent.rank_),
      size_(parent.size_),
      tag_upper_bound_(parent.tag_upper_bound_),
      timeout_s_(parent.timeout_s_),
      start_(parent.start_),
      node_ranks_(parent.node_ranks_),
      oversubscribed_(parent.oversubscribed_) {}

StreamPtr MpiComm::start_stream(StreamBody body) {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_SERIALIZED) return Comm::start_stream(std::move(body));
  return start_thread_stream(*this, std::unique_ptr<MpiComm>(new MpiComm(*this, SiblingOf{})), std::move(body),
                             timeout_s_);
}

std::vector<int> MpiComm::shared_memory_nodes(MPI_Comm node) {
  // Each rank learns its node's lowest rank, then every rank's; nodes are numbered in the order of those.
  int lowest = rank_;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Status status{};
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node, &request), rank_, "MPI_Iallreduce");
  wait_for(request, status, Category::kWait, "for the ranks of its node to name their lowest rank");
  std::vector<int> lowest_of(static_cast<std::size_t>(size_), 0);
  check_mpi(MPI_Iallgather(&lowest, 1, MPI_INT, lowest_of.data(), 1, MPI_INT, comm_, &request), rank_,
            "MPI_Iallgather");
  wait_for(request, status, Category::kWait, "for every rank to name its node");
  std::vector<int> leaders = lowest_of;
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  std::vector<int> nodes;
  nodes.reserve(lowest_of.size());
  for (const int leader : lowest_of) {
    nodes.push_back(static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader) - leaders.begin()));
  }
  return nodes;
}

MpiComm::~MpiComm() {
  if (sibling_) return;  // the parent owns the communicator; a sibling opens no windows
  for (auto& window : windows_) {
    if (!abandoned_) {
      MPI_Win_unlock_all(window->win);
      MPI_Win_free(&window->win);
    }
    window->comm = nullptr;
  }
  // MPI_Comm_free only marks the communicator for deallocation; it does not wait for the other ranks.
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

double MpiComm::now_s() const { return MPI_Wtime() - start_; }

namespace {

void check_tag(Tag tag, int upper_bound, int rank, const char* operation) {
  if (tag < 0 || tag > upper_bound) {
    throw CommError(rank_text(rank) + ": " + operation + " tag " + std::to_string(tag) +
                    " is out of MPI's tag range [0, " + std::to_string(upper_bound) + "]");
  }
}

}  // namespace

RequestPtr MpiComm::isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) {
  check_peer(destination, false, "send to");
  check_tag(tag, tag_upper_bound_, rank_, "send");
  if (data == nullptr && bytes > 0) {
    throw CommError(rank_text(rank_) + ": send of " + std::to_string(bytes) +
                    " bytes without data (the MPI executor always carries payloads)");
  }
  const int count = to_count(bytes, rank_, "a message of", "bytes");
  count_sent(bytes);
  const auto start = Clock::now();
  MPI_Request request = MPI_REQUEST_NULL;
  if (const int code = MPI_Isend(data, count, MPI_BYTE, destination, tag, comm_, &request); code != MPI_SUCCESS) {
    check_mpi(code, rank_, "MPI_Isend to " + rank_text(destination));
  }
  charge(category, seconds_since(start));
  return std::make_unique<SendRequest>(*this, request, destination, tag, bytes, category);
}

RequestPtr MpiComm::irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) {
  check_peer(source, true, "receive from");
  check_tag(tag, tag_upper_bound_, rank_, "receive");
  if (data == nullptr && bytes > 0) {
    throw CommError(rank_text(rank_) + ": receive of " + std::to_string(bytes) +
                    " bytes without a buffer (the MPI executor always carries payloads)");
  }
  to_count(bytes, rank_, "a message of", "bytes");
  auto posted = std::make_shared<PostedReceive>();
  posted->source = source;
  posted->tag = tag;
  posted->data = data;
  posted->bytes = bytes;
  unmatched_.push_back(posted);
  return std::make_unique<ReceiveRequest>(*this, std::move(posted), category);
}

std::optional<int> MpiComm::try_wait(MPI_Request& request, MPI_Status& status) {
  int code = MPI_SUCCESS;
  const bool done = poll([&] {
    int flag = 0;
    code = MPI_Test(&request, &flag, &status);
    return code != MPI_SUCCESS || flag != 0;
  });
  if (done) return code;

  // Timed out: cancel. Some requests MPI will not cancel (Open MPI's sends); those are freed unfinished.
  MPI_Cancel(&request);
  const auto grace_end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kCancelGrace_s));
  int flag = 0;
  while (!flag && Clock::now() < grace_end) {
    if (MPI_Test(&request, &flag, &status) != MPI_SUCCESS) break;
  }
  if (flag) {
    int cancelled = 0;
    MPI_Test_cancelled(&status, &cancelled);
    if (!cancelled) return MPI_SUCCESS;  // it completed at the deadline after all
  } else if (request != MPI_REQUEST_NULL) {
    MPI_Request_free(&request);
  }
  return std::nullopt;
}

void MpiComm::wait_for(MPI_Request& request, MPI_Status& status, Category category, const std::string& what) {
  const auto start = Clock::now();
  const std::optional<int> code = try_wait(request, status);
  charge(category, seconds_since(start));
  if (!code) throw_timeout(what);
  check_mpi(*code, rank_, what);
}

void MpiComm::throw_timeout(const std::string& what) const { throw TimeoutError(waited_text(rank_, timeout_s_, what)); }

void MpiComm::compute(const ComputeStep& step) { compute_on_wall_clock(step); }

void MpiComm::barrier(Category category) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm_, &request), rank_, "MPI_Ibarrier");
  MPI_Status status{};
  wait_for(request, status, category, "in a barrier for all " + std::to_string(size_) + " ranks");
}

namespace {

// This machine's boot id (36 characters), the same for every process of one running kernel.
std::string boot_id() {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(file, id);
  id.resize(36, ' ');
  return id;
}

}  // namespace

std::shared_ptr<DatagramEndpoint> MpiComm::datagrams(const DatagramOptions& options) {
  constexpr Tag kBootIdTag = kFirstCollectiveTag - 1;
  constexpr Tag kKeyTag = kFirstCollectiveTag - 2;
  // UDP on 127.0.0.1 reaches only this machine: every rank must run on rank 0's. Rank 0 draws the run's key and
  // hands it to the others over MPI, which only this world's ranks share (docs/dogwild.md "Threat model").
  std::string id = boot_id();
  DatagramKey key;
  if (rank_ == 0) {
    key = DatagramKey::random();
    for (int r = 1; r < size(); ++r) {
      send(r, kBootIdTag, id.data(), id.size(), Category::kGpuGpuPara);
      send(r, kKeyTag, &key, sizeof key, Category::kGpuGpuPara);
    }
  } else {
    std::string root(36, ' ');
    recv(0, kBootIdTag, root.data(), root.size(), Category::kGpuGpuPara);
    recv(0, kKeyTag, &key, sizeof key, Category::kGpuGpuPara);
    if (root != id) {
      throw UnavailableError(rank_text(rank_) +
                             ": datagrams over UDP on 127.0.0.1 need every rank on one machine, "
                             "and this rank runs on another machine than rank 0");
    }
  }
  udp::UdpOptions udp;
  udp.receive_buffer_bytes = options.receive_buffer_bytes;
  udp.send_rate_Bps = options.send_rate_Bps;
  udp.loss = injected_loss(options);
  udp.multicast = options.multicast;
  auto endpoint = std::make_shared<udp::UdpEndpoint>(rank_, key, udp);
  // Ports (< 2^16) are exact in floats: one allreduce gives every rank every port.
  std::vector<float> ports(static_cast<std::size_t>(size()), 0.0F);
  ports[static_cast<std::size_t>(rank_)] = static_cast<float>(endpoint->port());
  allreduce(*this, {ports.data(), ports.size()}, AllreduceAlgorithm::kRing,
            {Category::kGpuGpuPara, kFirstCollectiveTag});
  std::vector<std::uint16_t> peers;
  for (const float port : ports) peers.push_back(static_cast<std::uint16_t>(port));
  endpoint->set_peers(std::move(peers));
  return endpoint;
}

std::shared_ptr<SharedVector> MpiComm::shared_vector(const std::string& name, std::size_t count,
                                                     std::span<const float> initial) {
  if (sibling_) {
    // Its window would belong to a comm that ends with the stream.
    throw CommError(rank_text(rank_) + ": shared_vector('" + name + "') from a stream; open it before the stream");
  }
  // Every rank must ask for the same count: compare the largest and the smallest request.
  std::uint64_t extremes[2] = {count, ~static_cast<std::uint64_t>(count)};
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, extremes, 2, MPI_UINT64_T, MPI_MAX, comm_, &request), rank_,
            "MPI_Iallreduce for shared_vector('" + name + "')");
  MPI_Status status{};
  wait_for(request, status, Category::kWait, "in shared_vector('" + name + "') for all ranks");
  const std::uint64_t largest = extremes[0];
  const std::uint64_t smallest = ~extremes[1];
  if (largest != smallest) {
    throw CommError(rank_text(rank_) + ": shared_vector('" + name + "') asked for " + std::to_string(count) +
                    " floats, but the ranks asked for between " + std::to_string(smallest) + " and " +
                    std::to_string(largest));
  }
  to_count(count, rank_, "a shared vector of", "floats");

  auto window = std::make_shared<SharedWindow>();
  window->name = name;
  window->count = count;
  float* base = nullptr;
  const MPI_Aint local_bytes = rank_ == 0 ? static_cast<MPI_Aint>(count * sizeof(float)) : 0;
  check_mpi(MPI_Win_allocate(local_bytes, static_cast<int>(sizeof(float)), MPI_INFO_NULL, comm_, &base, &window->win),
            rank_, "MPI_Win_allocate for shared_vector('" + name + "')");
  MPI_Win_set_errhandler(window->win, MPI_ERRORS_RETURN);
  window->comm = this;
  windows_.push_back(window);
  // One passive-target epoch for the window's whole life: every access is then a request plus a flush.
  check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, window->win), rank_, "MPI_Win_lock_all");
  if (rank_ == 0) {
    const std::size_t given = std::min(initial.size(), count);
    std::copy_n(initial.begin(), given, base);
    std::fill(base + given, base + count, 0.0F);
    MPI_Win_sync(window->win);  // make the local stores visible to the window's public copy
  }
  barrier(Category::kWait);  // nobody reads before rank 0 has initialised
  return std::make_shared<MpiSharedVector>(window);
}

// --- MPI's own collectives ------------------------------------------------------------------------------------

namespace {

template <typename Call>
void timed(MpiComm& comm, Category category, const std::string& what, Call call) {
  const auto start = Clock::now();
  check_mpi(call(), comm.rank(), what);
  comm.charge(category, seconds_since(start));
}

void check_root(const MpiComm& comm, int root, const char* what) {
  if (root < 0 || root >= comm.size()) {
    throw CommError(rank_text(comm.rank()) + ": " + what + " root " + std::to_string(root) + " is out of range [0, " +
                    std::to_string(comm.size()) + ")");
  }
}

}  // namespace

void mpi_allreduce(MpiComm& comm, Floats buffer, Category category) {
  const int count = to_count(buffer.count, comm.rank(), "MPI_Allreduce of", "floats");
  timed(comm, category, "MPI_Allreduce",
        [&] { return MPI_Allreduce(MPI_IN_PLACE, buffer.data, count, MPI_FLOAT, MPI_SUM, comm.handle()); });
}

void mpi_reduce(MpiComm& comm, Floats buffer, int root, Category category) {
  check_root(comm, root, "MPI_Reduce");
  const int count = to_count(buffer.count, comm.rank(), "MPI_Reduce of", "floats");
  timed(comm, category, "MPI_Reduce", [&] {
    if (comm.rank() == root) {
      return MPI_Reduce(MPI_IN_PLACE, buffer.data, count, MPI_FLOAT, MPI_SUM, root, comm.handle());
    }
    return MPI_Reduce(buffer.data, nullptr, count, MPI_FLOAT, MPI_SUM, root, comm.handle());
  });
}

void mpi_broadcast(MpiComm& comm, Floats buffer, int root, Category category) {
  check_root(comm, root, "MPI_Bcast");
  const int count = to_count(buffer.count, comm.rank(), "MPI_Bcast of", "floats");
  timed(comm, category, "MPI_Bcast", [&] { return MPI_Bcast(buffer.data, count, MPI_FLOAT, root, comm.handle()); });
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<std::size_t>(std::max(length, 0)));
  const auto end = version.find_first_of(",\n");
  return end == std::string::npos ? version : version.substr(0, end);
}

}  // namespace dsgd::measure::mpi
