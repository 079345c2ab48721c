// Dogwild (seed 002; docs/dogwild.md "The algorithm"): distributed Hogwild whose weight streaming tolerates lost
// messages. Every rank is a solver and the master of one segment of the packed weights (rank r owns
// shard_of(n, P, r)). A master streams its segment to every other rank (its slaves) in chunks; a slave takes the
// difference between its weights and its copy of them as they were when it last adopted the master's -- its own
// progress since -- adopts the master's chunk plus that difference, keeps what it adopted as its new copy, and sends
// the difference back; the master adds it. So the ranks' gradients meet in one pass over memory, and a lost chunk or
// difference is a lost update, never a wrong one.
//
//   dogwild           over the datagram channel (Comm::datagrams: UDP on MPI, in-process queues on threads,
//                     SimGrid's network with bounded receivers): nothing waits; whatever arrived is applied
//   dogwild-multicast dogwild whose masters send each chunk once to all their slaves (send_to_group: IP multicast
//                     natively where the kernel delivers it, one send's cost in SimGrid; docs/dogwild.md "Multicast")
//   dogwild-reliable  the same streaming as reliable messages that every receiver waits for (MPI's, TCP's
//                     semantics): no loss, and each iteration waits for every peer's chunks and differences
//
// Deviation from the seed (docs/dogwild.md): a rank's streaming runs on its solver's thread, after each step
// (seed 002 runs it on threads of its own that never synchronise with the solvers).

#include <algorithm>

#include "algorithms/entries.hpp"
#include "algorithms/trainer.hpp"

namespace dsgd::algorithms {

namespace {

// Datagram kinds (ChunkHeader::kind).
constexpr std::uint32_t kMasterChunk = 1;  // a master's weights, master -> slave
constexpr std::uint32_t kDifference = 2;   // a slave's progress since the chunk it answers, slave -> master
// dogwild-reliable's messages: a segment and the difference that answers it.
constexpr Tag kSegmentTag = 310;
constexpr Tag kDifferenceTag = 311;

// `data + offset`, or null in a size-only world.
float* at(float* data, std::size_t offset) { return data != nullptr ? data + offset : nullptr; }

// Runs `call` on the endpoint, charging its wall time (natively: the system calls) to gpu-gpu para.
template <typename Call>
auto exchange_time(Comm& comm, Call&& call) {
  const double start_s = comm.now_s();
  auto result = call();
  comm.charge(Category::kGpuGpuPara, comm.now_s() - start_s);
  return result;
}

// What both variants share: the segments, the slave's copy of what masters sent, and the two updates.
class Streaming : public Algorithm {
 public:
  explicit Streaming(Trainer& trainer)
      : sgd_(trainer.make_sgd(trainer.hyper().momentum, {0, trainer.parameter_count()},
                              1.0F / static_cast<float>(trainer.comm().size()))),
        copy_(trainer.model_vector()),
        segment_(segment_of(trainer, trainer.comm().rank())) {
    // Every rank starts from the same weights: the copy of every master's segment is them.
    trainer.on_data([&] { std::copy_n(trainer.parameters(), trainer.parameter_count(), copy_.begin()); });
  }

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    for (std::int64_t i = 0; i < iterations; ++i) {
      trainer.compute_gradient();
      trainer.sgd_step(*sgd_);
      if (trainer.comm().size() > 1 && trainer.iterations() % trainer.hyper().period == 0) stream(trainer);
    }
  }

 protected:
  // One pass of streaming after a solver step.
  virtual void stream(Trainer& trainer) = 0;

  // A slave, given `count` floats of a master's weights at `offset` (null in a size-only world): leaves in
  // `difference` (which may be `master`) its progress since it last adopted a chunk there, w - copy, and adopts
  // master + difference, which becomes the copy. (A copy of the master's chunk alone would count the progress it
  // sent again, until the master's next chunk has it.)
  void adopt(Trainer& trainer, std::size_t offset, std::size_t count, const float* master, float* difference) {
    float* weights = at(trainer.parameters(), offset);
    float* copy = at(copy_.data(), offset);
    trainer.elementwise(2.0 * static_cast<double>(count), 16.0 * static_cast<double>(count), Category::kGpuUpdate, [=] {
      for (std::size_t k = 0; k < count; ++k) {
        const float position = master[k];
        const float progress = weights[k] - copy[k];
        difference[k] = progress;
        weights[k] = position + progress;
        copy[k] = weights[k];
      }
    });
  }

  // A master adds a slave's difference to its segment.
  static void add_difference(Trainer& trainer, std::size_t offset, std::size_t count, const float* difference) {
    float* weights = at(trainer.parameters(), offset);
    trainer.elementwise(static_cast<double>(count), 12.0 * static_cast<double>(count), Category::kGpuUpdate, [=] {
      for (std::size_t k = 0; k < count; ++k) weights[k] += difference[k];
    });
  }

  // Rank `rank`'s segment.
  static Shard segment_of(Trainer& trainer, int rank) {
    return shard_of(trainer.parameter_count(), trainer.comm().size(), rank);
  }

  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<float> copy_;  // the weights as last adopted from each master's chunks (this rank's segment: unused)
  Shard segment_;            // this rank's
};

// --- dogwild: datagrams ------------------------------------------------------------------------------------------

class Dogwild final : public Streaming {
 public:
  Dogwild(Trainer& trainer, bool multicast)
      : Streaming(trainer),
        multicast_(multicast),
        endpoint_(trainer.comm().datagrams(channel_options(trainer.hyper(), multicast))),
        difference_(trainer.has_data() ? std::min(trainer.hyper().chunk_floats, trainer.parameter_count()) : 0),
        cursors_(multicast ? 1 : static_cast<std::size_t>(trainer.comm().size())) {}

  std::map<std::string, double> counters(Trainer& trainer) const override {
    const ReceiveLedger& ledger = endpoint_->ledger();
    const auto value = [](std::uint64_t count) { return static_cast<double>(count); };
    std::map<std::string, double> out = {
        {"datagrams_sent", value(endpoint_->sent())},
        {"datagrams_injected_drops", value(endpoint_->injected_drops())},
        {"datagrams_send_refusals", value(endpoint_->send_refusals())},
        {"datagrams_received", value(ledger.received_count())},
        {"datagrams_missing", value(ledger.missing())},
        {"datagrams_reordered", value(ledger.reordered())},
        {"datagrams_refused", value(ledger.refused_total() + misdirected_)},
        {"datagrams_refused_misdirected", value(misdirected_)},
        {"datagrams_receiver_drops", value(endpoint_->receiver_drops())},
        {"weight_passes_received", passes_received(trainer)},
        {"multicast_ranks", multicast_ ? 1.0 : 0.0},
        {"multicast_once_ranks", multicast_ && endpoint_->sends_group_once() ? 1.0 : 0.0}};
    // Every refusal by its cause (core/datagram.hpp ChunkDefect), e.g. datagrams_refused_bad_tag.
    for (std::size_t d = 1; d < kChunkDefects; ++d) {
      std::string cause(to_string(static_cast<ChunkDefect>(d)));
      std::replace_if(
          cause.begin(), cause.end(), [](char c) { return c == ' ' || c == '-'; }, '_');
      out["datagrams_refused_" + cause] = value(ledger.refused(static_cast<ChunkDefect>(d)));
    }
    return out;
  }

 protected:
  // Applies what has arrived, then streams this rank's segment to every slave. Nothing waits.
  void stream(Trainer& trainer) override {
    Comm& comm = trainer.comm();
    const std::size_t n = trainer.parameter_count();
    // At most what a pass of every peer sends here, twice over: a flood cannot keep the solver from its next step.
    const std::size_t most =
        2 * (chunks(trainer, n) + chunks(trainer, segment_.count) * static_cast<std::size_t>(comm.size()));
    for (std::size_t k = 0; k < most; ++k) {
      const auto chunk = exchange_time(comm, [&] { return endpoint_->receive(n, 0.0); });
      if (!chunk) break;
      apply(trainer, *chunk);
    }
    // At most one pass over the segment to each slave (multicast: to all at once), from where the last one stopped:
    // once the transport refuses (a full send buffer) the rest waits for the next iteration, so a master streams
    // at what its route carries.
    if (segment_.count == 0) return;
    if (multicast_) {
      stream_segment(trainer, cursors_.front(), -1);
      return;
    }
    for (int slave = 0; slave < comm.size(); ++slave) {
      if (slave != comm.rank()) stream_segment(trainer, cursors_[static_cast<std::size_t>(slave)], slave);
    }
  }

 private:
  // Where this master's stream to a slave (or its group) stands: the next float of the segment, and the pass it is
  // in (ChunkHeader::round).
  struct Cursor {
    std::size_t at = 0;
    std::uint64_t pass = 0;
  };

  // Up to one pass over the segment from `cursor` to `slave` (-1: the group of all slaves).
  void stream_segment(Trainer& trainer, Cursor& cursor, int slave) {
    const std::size_t chunk_floats = trainer.hyper().chunk_floats;
    for (std::size_t streamed = 0; streamed < segment_.count;) {
      const std::size_t offset = segment_.offset + cursor.at;
      const std::size_t count = std::min(chunk_floats, segment_.count - cursor.at);
      if (send(trainer.comm(), slave, kMasterChunk, offset, cursor.pass, at(trainer.parameters(), offset), count) ==
          SendOutcome::kRefused) {
        return;
      }
      streamed += count;
      cursor.at += count;
      if (cursor.at == segment_.count) cursor = {0, cursor.pass + 1};
    }
  }

  static DatagramOptions channel_options(const Hyperparameters& hyper, bool multicast) {
    DatagramOptions options = hyper.datagrams;
    options.loss_seed = hyper.seed;  // the same datagrams lost for the same seed, on every executor
    options.multicast = multicast;
    return options;
  }

  // Passes over the other masters' weights this slave adopted: its sync rate's numerator (docs/dogwild.md
  // "Multicast").
  double passes_received(const Trainer& trainer) const {
    const std::size_t others = trainer.parameter_count() - segment_.count;
    return others > 0 ? static_cast<double>(adopted_floats_) / static_cast<double>(others) : 0.0;
  }

  static std::size_t chunks(const Trainer& trainer, std::size_t floats) {
    const std::size_t chunk_floats = trainer.hyper().chunk_floats;
    return (floats + chunk_floats - 1) / chunk_floats;
  }

  // To `destination`, or to the group of every other rank where it is -1.
  SendOutcome send(Comm& comm, int destination, std::uint32_t kind, std::size_t offset, std::uint64_t round,
                   const float* floats, std::size_t count) {
    const SendOutcome outcome = exchange_time(comm, [&] {
      return destination < 0 ? endpoint_->send_to_group(kind, offset, round, floats, count)
                             : endpoint_->send(destination, kind, offset, round, floats, count);
    });
    if (outcome == SendOutcome::kSent) comm.count_sent(kDatagramOverheadBytes + count * sizeof(float));
    return outcome;
  }

  // A master's chunk (this rank a slave of its segment) or a slave's difference (for this rank's segment); a chunk
  // from an unknown source or for any other range is counted and dropped.
  void apply(Trainer& trainer, const Chunk& chunk) {
    const std::uint32_t source = chunk.header.source;
    const int size = trainer.comm().size();
    if (source >= static_cast<std::uint32_t>(size) || static_cast<int>(source) == trainer.comm().rank()) {
      ++misdirected_;
      return;
    }
    const Shard expected = chunk.header.kind == kDifference ? segment_ : segment_of(trainer, static_cast<int>(source));
    const bool known = (chunk.header.kind == kMasterChunk || chunk.header.kind == kDifference) &&
                       chunk.header.offset >= expected.offset &&
                       chunk.header.offset + chunk.count <= expected.offset + expected.count &&
                       chunk.count <= trainer.hyper().chunk_floats;
    if (!known) {
      ++misdirected_;
      return;
    }
    const auto offset = static_cast<std::size_t>(chunk.header.offset);
    const float* floats = trainer.has_data() ? chunk.floats.data() : nullptr;
    if (chunk.header.kind == kDifference) {
      add_difference(trainer, offset, chunk.count, floats);
      return;
    }
    float* difference = trainer.has_data() ? difference_.data() : nullptr;
    adopt(trainer, offset, chunk.count, floats, difference);
    adopted_floats_ += chunk.count;
    if (send(trainer.comm(), static_cast<int>(source), kDifference, offset, chunk.header.round, difference,
             chunk.count) == SendOutcome::kRefused) {
      // Nothing left: the copy goes back to the master's chunk, so the next difference carries this one too.
      float* copy = at(copy_.data(), offset);
      const std::size_t count = chunk.count;
      trainer.elementwise(static_cast<double>(count), 12.0 * static_cast<double>(count), Category::kGpuUpdate, [=] {
        for (std::size_t k = 0; k < count; ++k) copy[k] -= difference[k];
      });
    }
  }

  bool multicast_;
  std::shared_ptr<DatagramEndpoint> endpoint_;
  std::vector<float> difference_;     // one chunk's, on its way back
  std::vector<Cursor> cursors_;       // by slave rank; multicast: one, the group's
  std::uint64_t adopted_floats_ = 0;  // of masters' chunks
  std::uint64_t misdirected_ = 0;  // well-formed chunks from an unknown source or for a range their kind does not allow
};

// --- dogwild-reliable: messages ----------------------------------------------------------------------------------

class DogwildReliable final : public Streaming {
 public:
  explicit DogwildReliable(Trainer& trainer)
      : Streaming(trainer), outgoing_(trainer.has_data() ? segment_.count : 0), received_(trainer.model_vector()) {}

  void visit_state(Trainer&, StateVisitor& state) override {
    state.optimiser("sgd", *sgd_);
    state.floats("copy", copy_);
  }

 protected:
  // Every master's segment to its slaves; each slave answers every master with its difference; every master adds
  // its slaves' differences, in rank order -- so the run is deterministic.
  void stream(Trainer& trainer) override {
    Comm& comm = trainer.comm();
    const int size = comm.size();
    const int rank = comm.rank();
    // The segment leaves from a copy: the slaves' differences change it before the sends are done.
    float* outgoing = trainer.has_data() ? outgoing_.data() : nullptr;
    const float* weights = at(trainer.parameters(), segment_.offset);
    trainer.elementwise(0, 8.0 * static_cast<double>(segment_.count), Category::kGpuGpuPara,
                        [=, this] { std::copy_n(weights, segment_.count, outgoing); });
    std::vector<RequestPtr> sends;
    for (int slave = 0; slave < size; ++slave) {
      if (slave == rank) continue;
      sends.push_back(comm.isend(slave, kSegmentTag, outgoing, segment_.count * sizeof(float), Category::kGpuGpuPara));
    }
    // Each master's segment lands in received_ and its difference leaves from there, at the segment's offset.
    float* scratch = received_.data();
    for (int master = 0; master < size; ++master) {
      if (master == rank) continue;
      const Shard segment = segment_of(trainer, master);
      float* floats = at(scratch, segment.offset);
      comm.recv(master, kSegmentTag, floats, segment.count * sizeof(float), Category::kGpuGpuPara);
      adopt(trainer, segment.offset, segment.count, floats, floats);
      sends.push_back(comm.isend(master, kDifferenceTag, floats, segment.count * sizeof(float), Category::kGpuGpuPara));
    }
    for (int slave = 0; slave < size; ++slave) {
      if (slave == rank) continue;
      // The segment's own part of received_ is free: no master sends it here.
      float* difference = at(scratch, segment_.offset);
      comm.recv(slave, kDifferenceTag, difference, segment_.count * sizeof(float), Category::kGpuGpuPara);
      add_difference(trainer, segment_.offset, segment_.count, difference);
    }
    for (auto& request : sends) request->wait();
  }

 private:
  std::vector<float> outgoing_;  // this rank's segment as it is sent
  std::vector<float> received_;  // masters' segments, then this rank's differences to them; slaves' differences
};

}  // namespace

std::vector<AlgorithmEntry> dogwild_entries() {
  return {{{"dogwild", "Dogwild: segment masters stream weights, slaves return differences, over lossy datagrams",
            /*has_master=*/false, /*synchronous=*/false},
           [](Trainer& trainer) { return std::make_unique<Dogwild>(trainer, false); }},
          {{"dogwild-multicast", "dogwild whose masters send each chunk once to all slaves (IP multicast natively)",
            /*has_master=*/false, /*synchronous=*/false},
           [](Trainer& trainer) { return std::make_unique<Dogwild>(trainer, true); }},
          {{"dogwild-reliable", "dogwild's streaming as reliable messages every receiver waits for (MPI, TCP)",
            /*has_master=*/false, /*synchronous=*/true},
           [](Trainer& trainer) { return std::make_unique<DogwildReliable>(trainer); }}};
}

}  // namespace dsgd::algorithms
