#include "simulate/simgrid/comm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/s4u/Mutex.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include "core/matching.hpp"
#include "simulate/compute_cost.hpp"
#include "simulate/simgrid/flows.hpp"
#include "simulate/simgrid/kernel_pool.hpp"

namespace dsgd::simulate {

namespace s4u = ::simgrid::s4u;

// What travels through a mailbox. The receiver owns it once the transfer completed.
struct SimMessage {
  int source = 0;
  Tag tag = 0;
  std::size_t bytes = 0;
  std::vector<std::byte> payload;  // empty without payloads
};

namespace {

std::string message_text(Tag tag, std::size_t bytes) {
  return "(tag " + std::to_string(tag) + ", " + std::to_string(bytes) + " bytes)";
}

// One irecv()'s side of matching: the source it accepts and, once matched, its message.
struct ReceiveSlot {
  int source = kAnySource;
  std::unique_ptr<SimMessage> message;
};

}  // namespace

std::string describe(const Waiting& waiting) {
  switch (waiting.kind) {
    case Waiting::Kind::kReceive:
      return "a message from " + peer_text(waiting.peer) + " " + message_text(waiting.tag, waiting.bytes);
    case Waiting::Kind::kSend:
      return peer_text(waiting.peer) + " to receive its message " + message_text(waiting.tag, waiting.bytes);
    case Waiting::Kind::kSharedVector:
      return "every rank to open shared vector '" + waiting.name + "'";
    case Waiting::Kind::kCollective:
      return "collective " + waiting.name + " to end";
    case Waiting::Kind::kStreamEnd:
      return "its stream to end";
    case Waiting::Kind::kStreamPost:
      return "its caller to post work";
    case Waiting::Kind::kNothing:
      break;
  }
  return "nothing";
}

// --- Inbox: the messages of one (rank, tag) ------------------------------------------------------------------------

class Inbox {
 public:
  Inbox(World& world, int rank, Tag tag) : world_(world), rank_(rank), tag_(tag) {}

  // Matches `slot` from the stash if a stashed message accepts it, else queues it and makes sure one more SimGrid
  // receive is posted, so that the transfer can start as soon as a sender is there.
  void post(ReceiveSlot* slot) {
    if (auto stashed = queues_.match_receive({slot->source, tag_})) {
      slot->message = std::move(stashed->second);
      return;
    }
    queues_.add_posted({slot->source, tag_}, slot);
    top_up();
  }

  // Forgets an unmatched slot (its request is being destroyed while the actor unwinds).
  void withdraw(ReceiveSlot* slot) { queues_.withdraw(slot); }

  // Takes arrivals, oldest SimGrid receive first, until `slot` is matched. Throws simgrid::TimeoutException once
  // `timeout` simulated seconds have passed (-1: never).
  void wait(const ReceiveSlot* slot, double timeout) {
    const double deadline = timeout < 0 ? -1 : s4u::Engine::get_clock() + timeout;
    while (!slot->message) {
      DSGD_ENFORCE(!gets_.empty(), "an unmatched receive has no SimGrid receive posted");
      Get& oldest = *gets_.front();
      try {
        oldest.activity->wait_for(deadline < 0 ? -1 : std::max(0.0, deadline - s4u::Engine::get_clock()));
      } catch (const ::simgrid::Exception&) {
        // SimGrid ended this receive (timed out, failed): a later wait needs a fresh one
        world_.unpost(rank_, tag_, oldest.post);
        gets_.pop_front();
        throw;
      }
      std::unique_ptr<SimMessage> arrived(oldest.message);
      gets_.pop_front();
      deliver(std::move(arrived));
      top_up();
    }
  }

  // Cancels SimGrid receives beyond those that posted slots need (left by withdrawn slots).
  void cancel_surplus() {
    while (gets_.size() > queues_.posted_count()) {
      world_.unpost(rank_, tag_, gets_.back()->post);
      gets_.back()->activity->cancel();
      gets_.pop_back();
    }
  }

 private:
  struct Get {
    World::Post post;
    s4u::CommPtr activity;
    SimMessage* message = nullptr;  // written by SimGrid when the transfer completes
  };

  // An arrival goes to the oldest posted slot that accepts it (MPI's matching order), else to the stash.
  void deliver(std::unique_ptr<SimMessage> message) {
    const Envelope envelope{message->source, message->tag};
    if (const auto taker = queues_.match_arrival(envelope)) {
      (*taker)->message = std::move(message);
    } else {
      queues_.add_unexpected(envelope, std::move(message));
    }
  }

  void top_up() {
    while (gets_.size() < queues_.posted_count()) {
      auto get = std::make_unique<Get>();
      get->post = world_.post_receive(rank_, tag_);
      get->activity = get->post.mailbox->get_async<SimMessage>(&get->message);
      gets_.push_back(std::move(get));
    }
  }

  World& world_;
  int rank_;
  Tag tag_;
  // Unmatched slots, and the stash: messages that arrived before a receive asked for them (core/matching.hpp).
  MatchQueues<ReceiveSlot*, std::unique_ptr<SimMessage>> queues_;
  std::deque<std::unique_ptr<Get>> gets_;  // posted SimGrid receives; posting order
};

// --- shared vectors ------------------------------------------------------------------------------------------

namespace {

struct SharedStorage {
  std::size_t count = 0;
  std::vector<float> values;  // empty without payloads
};

// One rank's handle on a shared vector: the storage is the world's, the time is charged to this rank.
class SimSharedVector final : public SharedVector {
 public:
  SimSharedVector(std::shared_ptr<SharedStorage> storage, SimgridComm& comm, std::string name)
      : storage_(std::move(storage)), comm_(comm), name_(std::move(name)) {}

  std::size_t size() const override { return storage_->count; }

  void read(std::size_t offset, std::span<float> out, Category category) override {
    check(offset, out.size());
    if (!storage_->values.empty() && out.data() != nullptr) {
      std::copy_n(storage_->values.begin() + static_cast<std::ptrdiff_t>(offset), out.size(), out.begin());
    }
    charge(static_cast<double>(out.size_bytes()), category);
  }

  void add(std::size_t offset, std::span<const float> delta, float scale, Category category) override {
    check(offset, delta.size());
    if (!storage_->values.empty() && delta.data() != nullptr) {
      for (std::size_t i = 0; i < delta.size(); ++i) storage_->values[offset + i] += scale * delta[i];
    }
    charge(2.0 * static_cast<double>(delta.size_bytes()), category);  // a load and a store per element
  }

 private:
  void check(std::size_t offset, std::size_t count) const {
    if (offset > storage_->count || count > storage_->count - offset) {
      throw CommError("rank " + std::to_string(comm_.rank()) + ": shared vector '" + name_ + "' access [" +
                      std::to_string(offset) + ", " + std::to_string(offset + count) + ") is out of range [0, " +
                      std::to_string(storage_->count) + ")");
    }
  }

  void charge(double bytes, Category category) {
    const double bandwidth = comm_.world().site(comm_.rank()).memory_bandwidth_Bps;
    if (bandwidth > 0) comm_.spend(bytes / bandwidth, category);
  }

  std::shared_ptr<SharedStorage> storage_;
  SimgridComm& comm_;
  std::string name_;
};

}  // namespace

// The world's shared vectors and the barrier that makes shared_vector() collective.
// Actors run one at a time, but every SimGrid call may let others run before it returns: state shared between
// actors is changed only between SimGrid calls.
struct SharedVectors {
  std::map<std::string, std::shared_ptr<SharedStorage>> storage;
  // The barrier's gate. A semaphore, not a mutex and condition variable: a killed actor unwinds out of its wait,
  // and must not release a mutex it does not hold. Created by maestro with the World, before any actor runs.
  s4u::SemaphorePtr gate = s4u::Semaphore::create(0);
  int arrived = 0;

  // Blocks until every rank arrived (or the world's timeout); `name` is for messages. The last rank to arrive
  // opens the gate once for each waiting rank; those are all blocked in acquire() by then, so a token cannot go to
  // a rank that already hurries to the next barrier.
  void barrier(SimgridComm& comm, const std::string& name) {
    World& world = comm.world();
    if (++arrived == world.size()) {
      arrived = 0;
      for (int waiter = 1; waiter < world.size(); ++waiter) gate->release();
      return;
    }
    Waiting waiting;
    waiting.kind = Waiting::Kind::kSharedVector;
    waiting.name = name;
    world.set_waiting(comm, waiting);
    const double timeout = world.simgrid_timeout();
    if (timeout < 0) {
      gate->acquire();
    } else if (gate->acquire_timeout(timeout)) {
      throw TimeoutError(waited_text(comm.rank(), timeout,
                                     "for " + describe(waiting) + " (" + std::to_string(arrived) + " of " +
                                         std::to_string(world.size()) + " arrived)"));
    }
    world.clear_waiting(comm);
  }
};

// --- shared chips -----------------------------------------------------------------------------------------------

// The steps running on one shared chip (platforms::SharedChip). A step's progress is the fraction of it left; its
// pace is 1 / shared_chip_seconds(alone, busy, the chip's load, cores), the load counting the steps running and the
// share of a core the chip's other ranks take while they wait. Whenever a step starts or ends, every running
// step's progress is brought up to now at the old pace and its rank is woken to wait again at the new one. Actors
// run one at a time, so the state needs no lock, but other actors run inside every simcall (release(),
// acquire_timeout()), so nothing is held across one; each rank's wake-up is a semaphore (created by maestro with the
// World) because a killed actor unwinds out of its wait and must not release a lock it does not hold.
struct ChipLoad {
  struct Step {
    int rank = 0;
    double alone_s = 0;
    double busy_s = 0;
    double left = 1;  // fraction of the step still to run
  };

  const RankSite* site = nullptr;  // any of the chip's ranks: cores, ranks and waiting share are the chip's
  std::vector<Step*> running;
  double updated_s = 0;
  std::map<int, s4u::SemaphorePtr> wake;  // by rank

  double seconds_of(const Step& step) const {
    return shared_chip_seconds(step.alone_s, step.busy_s, chip_load(*site, static_cast<int>(running.size())),
                               site->chip_cores);
  }
  void advance(double now_s) {
    for (Step* step : running) step->left = std::max(0.0, step->left - (now_s - updated_s) / seconds_of(*step));
    updated_s = now_s;
  }
  void wake_others(const Step& self) {
    // release() is a simcall: other actors run inside it and may start or end steps, so wake from a copy.
    std::vector<int> ranks;
    for (const Step* step : running) {
      if (step != &self) ranks.push_back(step->rank);
    }
    for (const int rank : ranks) wake.at(rank)->release();
  }
  void remove(const Step& self) { std::erase(running, &self); }
};

void World::compute_on_chip(int rank, double alone_s, double busy_s) {
  ChipLoad& chip = *chips_.at(site(rank).chip);
  ChipLoad::Step step{rank, alone_s, busy_s};
  // Unwinding (a killed actor) leaves the running steps without this one; normal ends re-pace the others too.
  struct Leave {
    ChipLoad& chip;
    const ChipLoad::Step& step;
    ~Leave() { chip.remove(step); }
  } leave{chip, step};
  chip.advance(s4u::Engine::get_clock());
  chip.running.push_back(&step);
  chip.wake_others(step);
  const s4u::SemaphorePtr& wake = chip.wake.at(rank);
  while (step.left > 0) {
    // A stale wake-up (one that raced the end of an earlier step) only makes this loop once more.
    const bool timed_out = wake->acquire_timeout(step.left * chip.seconds_of(step));
    chip.advance(s4u::Engine::get_clock());
    if (timed_out) break;
  }
  chip.remove(step);
  chip.wake_others(step);
}

// --- World ----------------------------------------------------------------------------------------------------

World::World(const WorldOptions& options, std::vector<s4u::Host*> hosts, std::vector<RankSite> sites,
             bool flow_collectives, platforms::Noise noise, std::uint64_t noise_seed, std::size_t trace_events,
             bool fold_fatpipe_flows, bool flow_replicas)
    : options_(options),
      hosts_(std::move(hosts)),
      sites_(std::move(sites)),
      nodes_(emulated_nodes(options)),
      noise_(std::move(noise), noise_seed),
      trace_events_(trace_events),
      waiting_(2 * static_cast<std::size_t>(options.size)),
      shared_(std::make_unique<SharedVectors>()) {
  DSGD_ENFORCE_EQ(hosts_.size(), static_cast<std::size_t>(options.size));
  DSGD_ENFORCE_EQ(sites_.size(), static_cast<std::size_t>(options.size));
  if (nodes_.empty()) {
    for (const RankSite& placed : sites_) nodes_.push_back(placed.node);
  }
  comms_.reserve(hosts_.size());
  for (int rank = 0; rank < options.size; ++rank) comms_.push_back(std::make_unique<SimgridComm>(*this, rank));
  if (flow_collectives) flows_ = std::make_unique<FlowCollectives>(*this, fold_fatpipe_flows, flow_replicas);
  for (int rank = 0; rank < options.size; ++rank) {
    const RankSite& placed = site(rank);
    if (placed.chip < 0) continue;
    auto& chip = chips_[placed.chip];
    if (!chip) {
      chip = std::make_unique<ChipLoad>();
      chip->site = &placed;
    }
    chip->wake[rank] = s4u::Semaphore::create(0);
    chip_of_host_[hosts_[static_cast<std::size_t>(rank)]] = placed.chip;
  }
}

bool World::transfer_shares_cores(const s4u::Host* source, const s4u::Host* destination) const {
  const auto from = chip_of_host_.find(source);
  const auto to = chip_of_host_.find(destination);
  if (from == chip_of_host_.end() || to == chip_of_host_.end() || from->second != to->second) return false;
  const ChipLoad& chip = *chips_.at(from->second);
  int others_computing = 0;
  for (const ChipLoad::Step* step : chip.running) {
    const s4u::Host* host = hosts_[static_cast<std::size_t>(step->rank)];
    if (host != source && host != destination) ++others_computing;
  }
  return others_computing + 2 > chip.site->chip_cores;
}

World::~World() = default;

void World::record(const TimelineSpan& span) {
  if (timeline_.size() < trace_events_) {
    timeline_.push_back(span);
  } else {
    ++timeline_dropped_;
  }
}

double World::noise_factor(int node, std::uint64_t step) { return noise_.factor(node, step, s4u::Engine::get_clock()); }

double World::simgrid_timeout() const { return std::isfinite(options_.timeout_s) ? options_.timeout_s : -1.0; }

namespace {

std::uint64_t destination_tag_key(int destination, Tag tag) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(destination)) << 32) | static_cast<std::uint32_t>(tag);
}

}  // namespace

s4u::Mailbox* World::mailbox(int destination, Tag tag) {
  const std::uint64_t key = destination_tag_key(destination, tag);
  if (const auto found = mailboxes_.find(key); found != mailboxes_.end()) return found->second;
  // by_name() is a simcall: other actors run before it returns, and may look up (and insert) the same mailbox. So
  // nothing is inserted before it returns; the same name gives the same mailbox, whoever inserts it.
  auto* mailbox = s4u::Mailbox::by_name(std::to_string(destination) + "/" + std::to_string(tag));
  mailboxes_.emplace(key, mailbox);
  return mailbox;
}

World::Post World::pair(int destination, Tag tag, bool send) {
  // A spare mailbox first: making one is a simcall, and other actors that run meanwhile may post to this (destination,
  // tag). Past this point nothing yields until the caller posts, and SimGrid handles the actors' posts in the order
  // they ran, so a partner's mailbox can go back to the pool now: the partner's post empties it before anyone else's.
  if (spare_mailboxes_.empty()) {
    auto* made = s4u::Mailbox::by_name("pair/" + std::to_string(mailboxes_made_++));
    spare_mailboxes_.push_back(made);
  }
  Unpaired& unpaired = unpaired_[destination_tag_key(destination, tag)];
  if (!unpaired.posts.empty() && unpaired.sends != send) {
    s4u::Mailbox* partner = unpaired.posts.front().mailbox;
    unpaired.posts.pop_front();
    spare_mailboxes_.push_back(partner);
    return {partner, 0};
  }
  const Post post{spare_mailboxes_.back(), ++posts_waited_};
  spare_mailboxes_.pop_back();
  unpaired.sends = send;
  unpaired.posts.push_back(post);
  return post;
}

void World::unpost(int destination, Tag tag, const Post& post) {
  if (post.waiting == 0) return;
  const auto found = unpaired_.find(destination_tag_key(destination, tag));
  if (found == unpaired_.end()) return;
  auto& posts = found->second.posts;
  const auto it = std::find_if(posts.begin(), posts.end(), [&](const Post& p) { return p.waiting == post.waiting; });
  if (it != posts.end()) posts.erase(it);
}

void* World::keep_datagram(int destination, Arrival datagram) {
  auto kept = std::make_unique<Arrival>(std::move(datagram));
  void* key = kept.get();
  datagrams_.emplace(key, std::move(kept));
  if (pending_datagrams_.empty()) pending_datagrams_.assign(static_cast<std::size_t>(size()), 0);
  ++pending_datagrams_[static_cast<std::size_t>(destination)];
  return key;
}

Arrival World::take_datagram(int destination, void* kept) {
  const auto found = datagrams_.find(kept);
  DSGD_ENFORCE(found != datagrams_.end(), "a datagram the world did not keep");
  Arrival datagram = std::move(*found->second);
  datagrams_.erase(found);
  --pending_datagrams_[static_cast<std::size_t>(destination)];
  return datagram;
}

const DatagramKey& World::datagram_key() {
  if (!datagram_key_) datagram_key_ = DatagramKey::random();
  return *datagram_key_;
}

void World::close_datagrams(int rank) {
  if (closed_datagrams_.empty()) closed_datagrams_.assign(static_cast<std::size_t>(size()), false);
  closed_datagrams_[static_cast<std::size_t>(rank)] = true;
}

bool World::datagrams_closed(int rank) const {
  return !closed_datagrams_.empty() && closed_datagrams_[static_cast<std::size_t>(rank)];
}

std::size_t World::pending_datagrams(int destination) const {
  return pending_datagrams_.empty() ? 0 : pending_datagrams_[static_cast<std::size_t>(destination)];
}

void World::fail(int rank, std::exception_ptr error) {
  if (!failure_.record(rank, std::move(error))) return;
  // The others would only time out waiting for this rank: end them now (they unwind; none records an error).
  s4u::Actor::kill_all();
}

void World::on_deadlock() {
  if (failure_) return;
  std::string report = "deadlock: every remaining rank waits forever";
  int listed = 0;
  int unlisted = 0;
  const auto ranks = static_cast<std::size_t>(size());
  for (std::size_t slot = 0; slot < waiting_.size(); ++slot) {
    if (waiting_[slot].kind == Waiting::Kind::kNothing) continue;
    if (listed == 8) {
      ++unlisted;
      continue;
    }
    report += (listed++ == 0 ? ": " : "; ") + std::string("rank ") + std::to_string(slot % ranks) +
              (slot < ranks ? "" : "'s stream") + " waits for " + describe(waiting_[slot]);
  }
  if (unlisted > 0) report += "; and " + std::to_string(unlisted) + " more";
  failure_.record(-1, std::make_exception_ptr(CommError(report)));  // no one rank failed
}

void World::set_waiting(const SimgridComm& comm, Waiting waiting) {
  const auto rank = static_cast<std::size_t>(comm.rank());
  waiting_[comm.is_stream() ? waiting_.size() / 2 + rank : rank] = std::move(waiting);
}

void World::clear_waiting(const SimgridComm& comm) {
  Waiting nothing;
  set_waiting(comm, nothing);
}

void World::bury(std::unique_ptr<SimMessage> message) { graveyard_.push_back(std::move(message)); }

std::vector<std::byte> World::copy_payload(const void* data, std::size_t bytes) {
  const auto* first = static_cast<const std::byte*>(data);
  if (const auto found = spare_payloads_.find(bytes); found != spare_payloads_.end() && !found->second.empty()) {
    std::vector<std::byte> storage = std::move(found->second.back());
    found->second.pop_back();
    spare_payload_bytes_ -= bytes;
    std::copy(first, first + bytes, storage.begin());
    return storage;
  }
  return std::vector<std::byte>(first, first + bytes);  // copied, not zeroed first
}

void World::recycle_payload(std::vector<std::byte> payload) {
  if (payload.empty() || spare_payload_bytes_ + payload.size() > kSparePayloadBytes) return;
  spare_payload_bytes_ += payload.size();
  spare_payloads_[payload.size()].push_back(std::move(payload));
}

// --- requests ---------------------------------------------------------------------------------------------------

namespace {

// Destroying a request that was not waited for waits for it (core/comm.hpp), except while the actor unwinds:
// blocking then would be wrong (and SimGrid forbids it for a killed actor). A failure in that wait cannot leave a
// destructor, so the comm keeps it for finish() -- a kill included, which must end the actor.
template <typename PendingRequest>
void wait_in_destructor(PendingRequest& request, SimgridComm& comm) {
  try {
    request.wait();
  } catch (...) {
    comm.defer_error(std::current_exception());
  }
}

class SendRequest final : public Request {
 public:
  SendRequest(SimgridComm& comm, int destination, Tag tag, std::unique_ptr<SimMessage> message, Category category)
      : comm_(comm), destination_(destination), tag_(tag), bytes_(message->bytes), category_(category) {
    message_ = message.release();  // SimGrid hands the pointer to the receiver, who owns it from then on
    post_ = comm.world().post_send(destination, tag);
    activity_ = post_.mailbox->put_async(message_, bytes_);
  }

  ~SendRequest() override {
    if (!done_ && std::uncaught_exceptions() == 0) wait_in_destructor(*this, comm_);
  }

  Status wait() override {
    const Status status{destination_, tag_, bytes_};
    if (done_) return status;
    done_ = true;
    World& world = comm_.world();
    const double begin = comm_.now_s();
    Waiting waiting;
    waiting.kind = Waiting::Kind::kSend;
    waiting.peer = destination_;
    waiting.tag = tag_;
    waiting.bytes = bytes_;
    world.set_waiting(comm_, waiting);
    try {
      activity_->wait_for(world.simgrid_timeout());
    } catch (const ::simgrid::TimeoutException&) {
      world.unpost(destination_, tag_, post_);
      world.bury(std::unique_ptr<SimMessage>(message_));  // never delivered
      throw TimeoutError(waited_text(comm_.rank(), world.simgrid_timeout(), "for " + describe(waiting)));
    } catch (const ::simgrid::Exception& failure) {  // network or host failure, cancelled transfer
      world.unpost(destination_, tag_, post_);
      throw CommError("rank " + std::to_string(comm_.rank()) + ": send to " + describe(waiting) +
                      " failed: " + failure.what());
    }
    world.clear_waiting(comm_);
    comm_.charge(category_, comm_.now_s() - begin);
    return status;
  }

 private:
  SimgridComm& comm_;
  int destination_;
  Tag tag_;
  std::size_t bytes_;
  Category category_;
  SimMessage* message_ = nullptr;
  World::Post post_;
  s4u::CommPtr activity_;
  bool done_ = false;
};

class RecvRequest final : public Request {
 public:
  RecvRequest(SimgridComm& comm, int source, Tag tag, void* data, std::size_t bytes, Category category)
      : comm_(comm), inbox_(comm.inbox(tag)), tag_(tag), data_(data), bytes_(bytes), category_(category) {
    slot_.source = source;
    inbox_.post(&slot_);
  }

  ~RecvRequest() override {
    if (!done_ && std::uncaught_exceptions() == 0) wait_in_destructor(*this, comm_);
    inbox_.withdraw(&slot_);  // the inbox must not keep a pointer to this slot, whatever happened
  }

  Status wait() override {
    if (done_) return status_;
    done_ = true;
    World& world = comm_.world();
    const double begin = comm_.now_s();
    if (!slot_.message) {
      Waiting waiting;
      waiting.kind = Waiting::Kind::kReceive;
      waiting.peer = slot_.source;
      waiting.tag = tag_;
      waiting.bytes = bytes_;
      world.set_waiting(comm_, waiting);
      try {
        inbox_.wait(&slot_, world.simgrid_timeout());
      } catch (const ::simgrid::TimeoutException&) {
        inbox_.withdraw(&slot_);
        throw TimeoutError(waited_text(comm_.rank(), world.simgrid_timeout(), "for " + describe(waiting)));
      } catch (const ::simgrid::Exception& failure) {
        inbox_.withdraw(&slot_);
        throw CommError("rank " + std::to_string(comm_.rank()) + ": receive of " + describe(waiting) +
                        " failed: " + failure.what());
      }
      world.clear_waiting(comm_);
    }
    const std::unique_ptr<SimMessage> message = std::move(slot_.message);
    if (message->bytes != bytes_) {
      throw CommError(size_mismatch_text(comm_.rank(), message->source, tag_, bytes_, message->bytes));
    }
    if (data_ != nullptr && !message->payload.empty()) std::memcpy(data_, message->payload.data(), bytes_);
    comm_.world().recycle_payload(std::move(message->payload));
    status_ = Status{message->source, message->tag, message->bytes};
    comm_.charge(category_, comm_.now_s() - begin);
    return status_;
  }

 private:
  SimgridComm& comm_;
  Inbox& inbox_;
  Tag tag_;
  void* data_;
  std::size_t bytes_;
  Category category_;
  ReceiveSlot slot_;
  Status status_;
  bool done_ = false;
};

}  // namespace

// --- streams ----------------------------------------------------------------------------------------------------

namespace {

// A stream's state, shared with its actor, which may outlive the Stream: a caller that unwinds does not wait for it
// (its failure is recorded and every actor killed). Actors run one at a time, so the flags need no lock.
struct StreamState final : public StreamPosts {
  std::unique_ptr<SimgridComm> comm;
  StreamBody body;
  s4u::SemaphorePtr posts = s4u::Semaphore::create(0);
  std::exception_ptr error;
  bool done = false;
  bool abandoned = false;

  void take() override {
    World& world = comm->world();
    const double begin = comm->now_s();
    Waiting waiting;
    waiting.kind = Waiting::Kind::kStreamPost;
    world.set_waiting(*comm, waiting);
    const double timeout = world.simgrid_timeout();
    bool timed_out = false;
    if (timeout < 0) {
      posts->acquire();
    } else {
      timed_out = posts->acquire_timeout(timeout);
    }
    world.clear_waiting(*comm);
    comm->charge(Category::kWait, comm->now_s() - begin);
    if (abandoned) throw CommError("rank " + std::to_string(comm->rank()) + "'s stream: its caller gave it up");
    if (timed_out) {
      throw TimeoutError(waited_text(comm->rank(), timeout, "in its stream for " + describe(waiting)));
    }
  }
};

class ActorStream final : public Stream {
 public:
  ActorStream(SimgridComm& caller, StreamBody body) : caller_(caller), state_(std::make_shared<StreamState>()) {
    state_->comm = std::make_unique<SimgridComm>(caller.world(), caller.rank(), &caller);
    state_->body = std::move(body);
    actor_ = s4u::Actor::create("rank-" + std::to_string(caller.rank()) + "-stream", caller.world().host(caller.rank()),
                                [state = state_] {
                                  try {
                                    state->body(*state->comm, *state);
                                    state->comm->finish();
                                  } catch (const ::simgrid::ForcefulKillException&) {
                                    throw;
                                  } catch (...) {
                                    state->error = std::current_exception();  // join() rethrows it
                                  }
                                  state->done = true;
                                });
  }

  ~ActorStream() override {
    if (joined_) return;
    if (std::uncaught_exceptions() > 0) {
      state_->abandoned = true;  // no simcall while unwinding: the world's failure kills the actor
      return;
    }
    try {
      join(Category::kWait);
    } catch (...) {
      caller_.defer_error(std::current_exception());
    }
  }

  void post() override { state_->posts->release(); }

  StreamResult join(Category category) override {
    DSGD_ENFORCE(!joined_, "a stream is joined once");
    joined_ = true;
    World& world = caller_.world();
    const double begin = caller_.now_s();
    // The body's own waits end within the timeout, so it ends within twice that unless it computes for long.
    const double timeout = world.simgrid_timeout() < 0 ? -1.0 : 2 * world.simgrid_timeout();
    if (!state_->done) {
      Waiting waiting;
      waiting.kind = Waiting::Kind::kStreamEnd;
      world.set_waiting(caller_, waiting);
      if (timeout < 0) {
        actor_->join();
      } else {
        actor_->join(timeout);
      }
      world.clear_waiting(caller_);
    }
    StreamResult result;
    result.joined_s = caller_.now_s() - begin;
    caller_.charge(category, result.joined_s);
    if (!state_->done) throw TimeoutError(waited_text(caller_.rank(), timeout, "for its stream to end"));
    if (state_->error) std::rethrow_exception(state_->error);
    result.stream = state_->comm->breakdown();
    caller_.count_sent(state_->comm->bytes_sent());  // the stream's messages are the rank's bytes on the wire
    return result;
  }

 private:
  SimgridComm& caller_;
  std::shared_ptr<StreamState> state_;
  s4u::ActorPtr actor_;
  bool joined_ = false;
};

}  // namespace

// --- datagrams -----------------------------------------------------------------------------------------------------

// Rank r's datagrams arrive in the mailbox of (r, kDatagramTag), whose permanent receiver is r's actor: a put flows
// to r's host at once, without waiting for a get, as datagrams fill a socket's receive buffer. The sender never
// waits: its datagrams queue at its network interface (SimNic), which refuses one that does not fit its
// send_buffer_bytes. A receiver holds at most queue_datagrams of them, on their way or waiting: a sender
// drops one beyond that, as a full buffer does, and the receiver's ledger sees the gap; so loss grows with
// congestion. Simulated size: header and floats, also when a size-only world carries the header alone.
constexpr Tag kDatagramTag = -7;

// A sender's network interface: an actor on the sender's host that puts its datagrams on the wire one at a time,
// each transfer done before the next starts, so a sender streams at what its route carries and holds one flow
// (thousands of concurrent flows also made SimGrid's sharing slow: 64 Dogwild ranks, 24 s of wall time for 10 steps
// against 3 s). A datagram for a receiver that has finished is lost there (a put to it would never end). The
// interface ends once its rank has finished and its queue is empty (SimgridComm::finish); not a daemon, whose end
// with the simulation hangs SimGrid's thread contexts (under ASan).
//
// A group datagram (multicast) costs one send: the transfer to its first live member carries its bytes over the
// sender's route, and the copies to the others follow as a switch's would, concurrently, a route's latency each
// (their own downlinks' share is not costed; docs/dogwild.md "Multicast").
struct SimNic {
  struct Outgoing {
    std::vector<int> destinations;  // one, or a group's members
    std::vector<void*> kept;        // the datagram kept for each
    std::uint64_t bytes = 0;
  };
  std::deque<Outgoing> queue;
  double queued_bytes = 0;  // queued or on the wire
  bool closing = false;     // the rank has finished: end once the queue is empty
  s4u::MutexPtr mutex = s4u::Mutex::create();
  s4u::ConditionVariablePtr ready = s4u::ConditionVariable::create();

  void push(const Outgoing& out) {
    queued_bytes += static_cast<double>(out.bytes);
    {
      const std::unique_lock lock(*mutex);
      queue.push_back(out);
    }
    ready->notify_one();
  }
  void close() {
    {
      const std::unique_lock lock(*mutex);
      closing = true;
    }
    ready->notify_one();
  }
};

class SimDatagramEndpoint final : public DatagramEndpoint {
 public:
  SimDatagramEndpoint(World& world, int rank, const DatagramOptions& options)
      : DatagramEndpoint(rank, world.datagram_key(), injected_loss(options), world.options().payload),
        world_(world),
        queue_datagrams_(options.queue_datagrams),
        send_buffer_bytes_(static_cast<double>(options.send_buffer_bytes)),
        nic_(std::make_shared<SimNic>()) {
    s4u::Actor::create("nic-" + std::to_string(rank), world.host(rank), [nic = nic_, &world] {
      for (;;) {
        SimNic::Outgoing out;
        {
          const std::unique_lock lock(*nic->mutex);
          nic->ready->wait(lock, [&] { return !nic->queue.empty() || nic->closing; });
          if (nic->queue.empty()) return;
          out = nic->queue.front();
          nic->queue.pop_front();
        }
        bool carried = false;
        std::vector<s4u::CommPtr> copies;
        for (std::size_t i = 0; i < out.destinations.size(); ++i) {
          const int destination = out.destinations[i];
          if (world.datagrams_closed(destination)) {
            world.take_datagram(destination, out.kept[i]);
          } else if (!carried) {
            world.mailbox(destination, kDatagramTag)->put(out.kept[i], out.bytes);
            carried = true;
          } else {
            copies.push_back(world.mailbox(destination, kDatagramTag)->put_async(out.kept[i], 0));
          }
        }
        s4u::Comm::wait_all(copies);
        nic->queued_bytes -= static_cast<double>(out.bytes);
      }
    });
  }

  const std::shared_ptr<SimNic>& nic() const { return nic_; }
  std::string group_delivery() const override { return "one send over the sender's route (simulated multicast)"; }
  bool sends_group_once() const override { return true; }

 protected:
  bool transmit(int destination, std::vector<std::byte> datagram) override {
    if (destination >= world_.size()) throw InputError("datagram: no endpoint " + std::to_string(destination));
    authenticate(simulated_bytes(datagram));
    return enqueue({destination}, std::move(datagram));
  }

  bool transmit_to_group(std::vector<std::byte> datagram) override {
    authenticate(simulated_bytes(datagram));
    std::vector<int> members;
    for (int member = 0; member < world_.size(); ++member) {
      if (member != rank()) members.push_back(member);
    }
    return enqueue(members, std::move(datagram));
  }

  std::optional<Arrival> next_datagram(double timeout_s) override {
    s4u::Mailbox* mailbox = world_.mailbox(rank(), kDatagramTag);
    // Without a wait, only a datagram that has arrived: one still on its way stays there for the next receive.
    if (timeout_s <= 0 && !mailbox->ready()) return std::nullopt;
    void* kept = nullptr;
    const s4u::CommPtr get = mailbox->get_async<void>(&kept);
    try {
      get->wait_for(timeout_s);
    } catch (const ::simgrid::TimeoutException&) {
      // The receive took a datagram already on its way: cancelling would lose it mid-transfer, so it is waited for.
      if (get->get_sender() == nullptr) {
        get->cancel();
        return std::nullopt;
      }
      get->wait();
    }
    Arrival arrival = world_.take_datagram(rank(), kept);
    authenticate(simulated_bytes(arrival.bytes));
    return arrival;
  }

  double clock_s() const override { return s4u::Engine::get_clock(); }

 private:
  // Queues `datagram` for `members` as one send of the interface. A full send buffer refuses, as a full socket
  // buffer refuses a non-blocking sendto; a member whose receive queue is full loses its copy on the wire.
  bool enqueue(const std::vector<int>& members, std::vector<std::byte> datagram) {
    const std::uint64_t bytes = simulated_bytes(datagram);
    if (nic_->queued_bytes + static_cast<double>(bytes) > send_buffer_bytes_) return false;
    SimNic::Outgoing out{{}, {}, bytes};
    for (const int member : members) {
      if (world_.pending_datagrams(member) >= queue_datagrams_) continue;
      out.destinations.push_back(member);
      out.kept.push_back(
          world_.keep_datagram(member, {member == members.back() ? std::move(datagram) : datagram, rank()}));
    }
    if (!out.destinations.empty()) nic_->push(out);
    return true;
  }

  // The sender's tag or the receiver's check of `bytes` (SipHash over the whole datagram) on this rank's host, at
  // its CPU's measured rate (RankSite::datagram_Bps); the caller charges the time to its exchange's category.
  void authenticate(std::uint64_t bytes) const {
    const double rate = world_.site(rank()).datagram_Bps;
    if (rate > 0)
      s4u::this_actor::execute(static_cast<double>(bytes) / rate * s4u::this_actor::get_host()->get_speed());
  }

  // Header, floats and tag, also when a size-only world carries header and tag alone.
  static std::uint64_t simulated_bytes(const std::vector<std::byte>& datagram) {
    std::uint32_t count = 0;
    std::memcpy(&count, datagram.data() + 12, sizeof count);
    return kDatagramOverheadBytes + std::uint64_t{count} * sizeof(float);
  }

  World& world_;
  std::size_t queue_datagrams_;
  double send_buffer_bytes_;
  std::shared_ptr<SimNic> nic_;
};

std::shared_ptr<DatagramEndpoint> SimgridComm::datagrams(const DatagramOptions& options) {
  if (caller_ != nullptr) {
    throw CommError("rank " + std::to_string(rank_) + ": datagrams() from a stream; open them before the stream");
  }
  world_.mailbox(rank_, kDatagramTag)->set_receiver(s4u::Actor::self());
  receives_datagrams_ = true;
  auto endpoint = std::make_shared<SimDatagramEndpoint>(world_, rank_, options);
  nic_ = endpoint->nic();
  return endpoint;
}

// --- SimgridComm --------------------------------------------------------------------------------------------------

SimgridComm::SimgridComm(World& world, int rank, SimgridComm* caller) : world_(world), rank_(rank), caller_(caller) {}

SimgridComm::~SimgridComm() = default;

double SimgridComm::now_s() const { return s4u::Engine::get_clock(); }

Inbox& SimgridComm::inbox(Tag tag) {
  if (caller_ != nullptr) return caller_->inbox(tag);  // one (rank, tag) mailbox, one matching state
  if (const auto found = inboxes_.find(tag); found != inboxes_.end()) return *found->second;
  auto inbox = std::make_unique<Inbox>(world_, rank_, tag);
  return *inboxes_.emplace(tag, std::move(inbox)).first->second;
}

RequestPtr SimgridComm::isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) {
  check_peer(destination, /*any_allowed=*/false, "isend to");
  auto message = std::make_unique<SimMessage>();
  message->source = rank_;
  message->tag = tag;
  message->bytes = bytes;
  if (has_payload() && bytes > 0) {
    if (data == nullptr) {
      throw CommError("rank " + std::to_string(rank_) + ": isend of " + std::to_string(bytes) + " bytes to rank " +
                      std::to_string(destination) + " from a null buffer in a world with payloads");
    }
    // Copied now, so the sender's buffer is free as soon as wait() returns, whatever the receiver does.
    message->payload = world_.copy_payload(data, bytes);
  }
  count_sent(bytes);
  return std::make_unique<SendRequest>(*this, destination, tag, std::move(message), category);
}

RequestPtr SimgridComm::irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) {
  check_peer(source, /*any_allowed=*/true, "irecv from");
  if (has_payload() && bytes > 0 && data == nullptr) {
    throw CommError("rank " + std::to_string(rank_) + ": irecv of " + std::to_string(bytes) + " bytes from " +
                    peer_text(source) + " into a null buffer in a world with payloads");
  }
  return std::make_unique<RecvRequest>(*this, source, tag, data, bytes, category);
}

namespace {

// Waits for a pool kernel that was not waited for (the actor is unwinding: killed, or its simulated time failed):
// the kernel refers to the step's captures, which are about to go.
struct PendingKernel {
  KernelPool::TicketPtr ticket;
  // Waits here, rethrowing the kernel's error; the destructor then has nothing left to wait for.
  void wait() {
    const KernelPool::TicketPtr taken = std::move(ticket);
    taken->wait();
  }
  ~PendingKernel() {
    if (!ticket) return;
    try {
      ticket->wait();
    } catch (...) {  // the actor already fails with another error
    }
  }
};

}  // namespace

void SimgridComm::compute(const ComputeStep& step) {
  DSGD_ENFORCE(step.flops >= 0, "compute step with negative flops");
  const double begin = now_s();
  PendingKernel pending;
  if (has_payload() && step.kernel) {
    KernelPool* pool = side_by_side_pool();
    if (pool != nullptr && step.rank_local) {
      pending.ticket = pool->submit(step.kernel);
    } else {
      step.kernel();
    }
  }
  const RankSite& site = world_.site(rank_);
  const double noise = world_.noise_factor(site.node, (caller_ != nullptr ? caller_ : this)->compute_steps_++);
  const double seconds = compute_seconds(site, step) * noise;
  if (step.kernel_class == "copy" && site.chip < 0) {
    // A DMA engine's copy: it takes its time without taking the host's compute, so a stream's copies overlap the
    // caller's compute steps (GeePS's background thread) as CUDA's copy engines do. (On a shared chip the cores
    // copy, sharing the chip as its other steps do.)
    if (seconds > 0) s4u::this_actor::sleep_for(seconds);
  } else if (site.chip >= 0 && caller_ == nullptr) {
    if (seconds > 0) world_.compute_on_chip(rank_, compute_seconds_alone(site, step) * noise, seconds);
  } else if (seconds > 0) {
    // The host is busy for that long: an execution of the host's speed x seconds.
    s4u::this_actor::execute(seconds * s4u::this_actor::get_host()->get_speed());
  }
  if (pending.ticket) {
    pending.wait();  // after the simulated time, in which the other actors ran and handed over theirs
  }
  charge(step.category, now_s() - begin);
}

KernelPool* SimgridComm::side_by_side_pool() const {
  // A stream's kernels stay in order with its caller's: only the rank's own actor hands kernels over.
  return has_payload() && caller_ == nullptr ? world_.kernel_pool() : nullptr;
}

int SimgridComm::side_by_side() const {
  const KernelPool* pool = side_by_side_pool();
  return pool != nullptr ? pool->threads() : 1;
}

void SimgridComm::run_side_by_side(std::span<const std::function<void()>> kernels) {
  KernelPool* pool = side_by_side_pool();
  if (pool == nullptr || kernels.size() < 2) {
    Comm::run_side_by_side(kernels);
    return;
  }
  std::vector<PendingKernel> others(kernels.size() - 1);  // waited for even if the first kernel throws
  for (std::size_t k = 1; k < kernels.size(); ++k) others[k - 1].ticket = pool->submit(kernels[k]);
  kernels.front()();
  for (auto& other : others) other.wait();
}

std::future<void> SimgridComm::start_beside(std::function<void()> work) {
  return std::async(std::launch::deferred, std::move(work));
}

void SimgridComm::set_up(const std::function<void()>& work) {
  KernelPool* pool = side_by_side_pool();
  if (pool == nullptr) {
    work();
    return;
  }
  PendingKernel pending;  // waited for even if the actor is killed in the yield
  pending.ticket = pool->submit(work);
  s4u::this_actor::yield();
  pending.wait();
}

StreamPtr SimgridComm::start_stream(StreamBody body) { return std::make_unique<ActorStream>(*this, std::move(body)); }

void SimgridComm::charged(Category category, double seconds) {
  if (seconds > 0) world_.record({rank_, category, now_s() - seconds, seconds});
}

void SimgridComm::run_collective(const CollectiveCall& call, const std::function<void(Comm&)>& body) {
  if (FlowCollectives* flows = world_.flow_collectives()) {
    flows->join(*this, call, body);
  } else {
    body(*this);
  }
}

std::shared_ptr<SharedVector> SimgridComm::shared_vector(const std::string& name, std::size_t count,
                                                         std::span<const float> initial) {
  SharedVectors& shared = world_.shared_vectors();
  if (rank_ == 0) {
    if (initial.size() > count) {
      throw CommError("rank 0: shared_vector('" + name + "') of " + std::to_string(count) + " floats got " +
                      std::to_string(initial.size()) + " initial values");
    }
    auto storage = std::make_shared<SharedStorage>();
    storage->count = count;
    if (has_payload()) {
      storage->values.assign(count, 0.0F);
      std::copy(initial.begin(), initial.end(), storage->values.begin());
    }
    shared.storage[name] = std::move(storage);
  }
  shared.barrier(*this, name);  // rank 0 has created it; nobody reads before that
  const auto found = shared.storage.find(name);
  DSGD_ENFORCE(found != shared.storage.end(), "shared vector '" + name + "' missing after the barrier");
  if (found->second->count != count) {
    throw CommError("rank " + std::to_string(rank_) + ": shared_vector('" + name + "') asked for " +
                    std::to_string(count) + " floats, rank 0 created " + std::to_string(found->second->count));
  }
  return std::make_shared<SimSharedVector>(found->second, *this, name);
}

void SimgridComm::spend(double seconds, Category category) {
  if (seconds <= 0) return;
  s4u::this_actor::sleep_for(seconds);
  charge(category, seconds);
}

void SimgridComm::defer_error(std::exception_ptr error) {
  if (!deferred_error_) deferred_error_ = std::move(error);
}

void SimgridComm::finish() {
  for (auto& [tag, inbox] : inboxes_) inbox->cancel_surplus();
  // SimGrid keeps a permanent receiver's actor alive until it is unset (s4u::Mailbox::set_receiver).
  if (receives_datagrams_) {
    world_.close_datagrams(rank_);
    world_.mailbox(rank_, kDatagramTag)->set_receiver(nullptr);
  }
  if (nic_) nic_->close();  // the rank's network interface sends what is queued and ends
  if (deferred_error_) std::rethrow_exception(deferred_error_);
}

}  // namespace dsgd::simulate
