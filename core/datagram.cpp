#include "core/datagram.hpp"

#include <sys/random.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/nn/random.hpp"

namespace dsgd {

namespace {

constexpr EnumNames<kChunkDefects> kDefectNames = {"none",         "short",     "bad magic",      "wrong length",
                                                   "foreign run",  "bad tag",   "foreign sender", "replayed",
                                                   "out of range", "non-finite"};

// Little-endian fields at fixed places (x86-64 and aarch64 are little-endian; the build refuses others).
static_assert(std::endian::native == std::endian::little, "the datagram format is little-endian");

template <typename T>
void put(std::byte* out, std::size_t at, T value) {
  std::memcpy(out + at, &value, sizeof value);
}
template <typename T>
T get(const std::byte* in, std::size_t at) {
  T value;
  std::memcpy(&value, in + at, sizeof value);
  return value;
}

}  // namespace

std::string_view to_string(ChunkDefect defect) { return name_of(defect, kDefectNames); }

DatagramKey DatagramKey::random() {
  std::uint64_t words[3];
  auto* bytes = reinterpret_cast<unsigned char*>(words);
  for (std::size_t got = 0; got < sizeof words;) {
    const ssize_t n = ::getrandom(bytes + got, sizeof words - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IoError(std::string("datagram key: getrandom: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  return {{words[0], words[1]}, words[2]};
}

namespace {

// Header, `floats` bytes of payload (may be none) and room for the tag; the tag is set by seal().
std::vector<std::byte> unsealed(const ChunkHeader& header, std::size_t count, std::size_t payload_bytes,
                                const DatagramKey& key) {
  if (count > kMaxChunkFloats) {
    throw InputError("datagram: a chunk of " + std::to_string(count) + " floats exceeds one datagram (" +
                     std::to_string(kMaxChunkFloats) + " floats)");
  }
  if (header.kind >= kGroupKindBit) {
    throw InputError("datagram: kind " + std::to_string(header.kind) + " takes the group bit (kinds are < 2^31)");
  }
  std::vector<std::byte> out(kDatagramOverheadBytes + payload_bytes);
  put(out.data(), 0, kDatagramMagic);
  put(out.data(), 4, header.kind | (header.group ? kGroupKindBit : 0U));
  put(out.data(), 8, header.source);
  put(out.data(), 12, static_cast<std::uint32_t>(count));
  put(out.data(), 16, header.sequence);
  put(out.data(), 24, header.offset);
  put(out.data(), 32, header.round);
  put(out.data(), 40, key.nonce);
  return out;
}

// The tag of every byte before the tag's place.
std::uint64_t tag_of(std::span<const std::byte> datagram, const DatagramKey& key) {
  return siphash24(key.tag, datagram.first(datagram.size() - kDatagramTagBytes));
}

std::vector<std::byte> seal(std::vector<std::byte> datagram, const DatagramKey& key) {
  put(datagram.data(), datagram.size() - kDatagramTagBytes, tag_of(datagram, key));
  return datagram;
}

}  // namespace

std::vector<std::byte> encode_header(const ChunkHeader& header, std::size_t count, const DatagramKey& key) {
  return seal(unsealed(header, count, 0, key), key);
}

std::vector<std::byte> encode_chunk(const ChunkHeader& header, std::span<const float> floats, const DatagramKey& key) {
  std::vector<std::byte> out = unsealed(header, floats.size(), floats.size_bytes(), key);
  if (!floats.empty()) std::memcpy(out.data() + kDatagramHeaderBytes, floats.data(), floats.size_bytes());
  return seal(std::move(out), key);
}

ChunkDefect decode_chunk(std::span<const std::byte> datagram, std::size_t buffer_floats, const DatagramKey& key,
                         Chunk& chunk, bool header_only) {
  if (datagram.size() < kDatagramOverheadBytes) return ChunkDefect::kShort;
  const std::byte* in = datagram.data();
  if (get<std::uint32_t>(in, 0) != kDatagramMagic) return ChunkDefect::kBadMagic;
  const auto count = get<std::uint32_t>(in, 12);
  const std::size_t floats = header_only ? 0 : std::size_t{count};
  if (datagram.size() != kDatagramOverheadBytes + floats * sizeof(float)) return ChunkDefect::kWrongLength;
  if (get<std::uint64_t>(in, 40) != key.nonce) return ChunkDefect::kForeignRun;
  if (get<std::uint64_t>(in, datagram.size() - kDatagramTagBytes) != tag_of(datagram, key)) return ChunkDefect::kBadTag;
  const auto offset = get<std::uint64_t>(in, 24);
  if (offset > buffer_floats || count > buffer_floats - offset) return ChunkDefect::kOutOfRange;
  for (std::size_t k = 0; k < floats; ++k) {
    if (!std::isfinite(get<float>(in, kDatagramHeaderBytes + k * sizeof(float)))) return ChunkDefect::kNonFinite;
  }
  const auto kind = get<std::uint32_t>(in, 4);
  chunk.header.kind = kind & ~kGroupKindBit;
  chunk.header.group = (kind & kGroupKindBit) != 0;
  chunk.header.source = get<std::uint32_t>(in, 8);
  chunk.header.sequence = get<std::uint64_t>(in, 16);
  chunk.header.offset = offset;
  chunk.header.round = get<std::uint64_t>(in, 32);
  chunk.count = count;
  chunk.floats.resize(floats);
  if (floats > 0) std::memcpy(chunk.floats.data(), in + kDatagramHeaderBytes, floats * sizeof(float));
  return ChunkDefect::kNone;
}

bool ReceiveLedger::accept(const ChunkHeader& header) {
  Source& source = sources_[std::uint64_t{header.source} << 1 | (header.group ? 1U : 0U)];
  const std::uint64_t sequence = header.sequence;
  if (sequence >= source.next) {
    // The sequences jumped over are missing until they arrive: one range, whatever the jump.
    if (sequence > source.next) source.gaps.push_back({source.next, sequence});
    source.next = sequence + 1;
    bound(source);
    ++received_;
    return true;
  }
  // The gap holding `sequence`: the last one starting at or below it.
  auto it = std::upper_bound(source.gaps.begin(), source.gaps.end(), sequence,
                             [](std::uint64_t s, const Gap& gap) { return s < gap.first; });
  if (it == source.gaps.begin() || sequence >= std::prev(it)->end) return false;
  const auto gap = std::prev(it);
  if (gap->first == sequence || gap->end == sequence + 1) {
    if (gap->first == sequence) {  // an end of the gap filled
      ++gap->first;
    } else {
      --gap->end;
    }
    if (gap->first == gap->end) source.gaps.erase(gap);
  } else {
    const Gap above{sequence + 1, gap->end};  // the middle: the gap splits in two
    gap->end = sequence;
    source.gaps.insert(it, above);
  }
  bound(source);
  ++reordered_;
  ++received_;
  return true;
}

void ReceiveLedger::bound(Source& source) {
  while (source.gaps.size() > kMaxGaps) {
    source.given_up += source.gaps.front().end - source.gaps.front().first;
    source.gaps.erase(source.gaps.begin());
  }
}

std::uint64_t ReceiveLedger::missing() const {
  std::uint64_t total = 0;
  for (const auto& [rank, source] : sources_) {
    total += source.given_up;
    for (const Gap& gap : source.gaps) total += gap.end - gap.first;
  }
  return total;
}

std::size_t ReceiveLedger::gap_ranges() const {
  std::size_t total = 0;
  for (const auto& [rank, source] : sources_) total += source.gaps.size();
  return total;
}

double ReceiveLedger::loss_rate() const {
  const double lost = static_cast<double>(missing());
  const double all = lost + static_cast<double>(received_);
  return all > 0 ? lost / all : 0.0;
}

std::uint64_t ReceiveLedger::refused_total() const {
  std::uint64_t total = 0;
  for (const auto count : refused_) total += count;
  return total;
}

LossModel::LossModel(double rate, std::uint64_t seed) : rate_(rate), seed_(seed) {
  if (!(rate >= 0.0 && rate <= 1.0)) {
    throw InputError("loss rate " + std::to_string(rate) + " is not a probability in [0, 1]");
  }
}

bool LossModel::drops(std::uint32_t source, std::uint32_t destination, std::uint64_t sequence) const {
  if (rate_ <= 0.0) return false;
  const std::uint64_t stream = nn::mix64(seed_ ^ (std::uint64_t{source} << 32 | destination));
  // 53 random bits as a double in [0, 1).
  const double u = static_cast<double>(nn::random_bits(stream, sequence) >> 11) * 0x1.0p-53;
  return u < rate_;
}

double DatagramEndpoint::clock_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

SendOutcome DatagramEndpoint::send(int destination, std::uint32_t kind, std::uint64_t offset, std::uint64_t round,
                                   const float* floats, std::size_t count) {
  if (destination < 0) throw InputError("datagram: no endpoint " + std::to_string(destination));
  if (sequences_.size() <= static_cast<std::size_t>(destination)) sequences_.resize(destination + 1U, 0);
  std::uint64_t& sequence = sequences_[static_cast<std::size_t>(destination)];
  const ChunkHeader header{kind, static_cast<std::uint32_t>(rank_), sequence, offset, round};
  if (loss_ && loss_->drops(header.source, static_cast<std::uint32_t>(destination), header.sequence)) {
    ++sequence;
    ++injected_;
    return SendOutcome::kLost;
  }
  return hand_over(sequence, header, floats, count, destination);
}

SendOutcome DatagramEndpoint::send_to_group(std::uint32_t kind, std::uint64_t offset, std::uint64_t round,
                                            const float* floats, std::size_t count) {
  ChunkHeader header{kind, static_cast<std::uint32_t>(rank_), group_sequence_, offset, round};
  header.group = true;
  return hand_over(group_sequence_, header, floats, count, -1);
}

// Encodes and transmits (to the group where `destination` < 0); the sequence is used only if the transport took it,
// so a refusal leaves no gap.
SendOutcome DatagramEndpoint::hand_over(std::uint64_t& sequence, const ChunkHeader& header, const float* floats,
                                        std::size_t count, int destination) {
  auto datagram = payload_ ? encode_chunk(header, {floats, count}, key_) : encode_header(header, count, key_);
  if (!(destination < 0 ? transmit_to_group(std::move(datagram)) : transmit(destination, std::move(datagram)))) {
    ++refused_sends_;
    return SendOutcome::kRefused;
  }
  ++sequence;
  ++sent_;
  return SendOutcome::kSent;
}

std::optional<Chunk> DatagramEndpoint::receive(std::size_t buffer_floats, double timeout_s) {
  const double deadline_s = clock_s() + timeout_s;
  while (true) {
    const auto arrival = next_datagram(std::max(0.0, deadline_s - clock_s()));
    if (!arrival) return std::nullopt;
    Chunk chunk;
    ChunkDefect defect = decode_chunk(arrival->bytes, buffer_floats, key_, chunk, !payload_);
    if (defect == ChunkDefect::kNone &&
        static_cast<std::int64_t>(arrival->sender) != std::int64_t{chunk.header.source}) {
      defect = ChunkDefect::kForeignSender;
    }
    if (defect == ChunkDefect::kNone) {
      // A group datagram meets the loss model here, on this member's link; its own stream of decisions (top bit).
      if (chunk.header.group && loss_ &&
          loss_->drops(chunk.header.source, static_cast<std::uint32_t>(rank_), chunk.header.sequence | 1ULL << 63)) {
        ++injected_;
        continue;
      }
      if (ledger_.accept(chunk.header)) return chunk;
      defect = ChunkDefect::kReplayed;
    }
    ledger_.refuse(defect);
  }
}

// --- in-process channel ----------------------------------------------------------------------------------------

struct InProcessDatagrams::Queue {
  std::mutex mutex;
  std::condition_variable arrived;
  std::deque<Arrival> datagrams;
  std::uint64_t overflows = 0;
};

class InProcessDatagrams::Endpoint final : public DatagramEndpoint {
 public:
  Endpoint(InProcessDatagrams& channel, int rank, const DatagramKey& key, const std::optional<LossModel>& loss)
      : DatagramEndpoint(rank, key, loss), channel_(channel) {}

  std::string group_delivery() const override { return "a copy to each member's queue"; }

 protected:
  bool transmit(int destination, std::vector<std::byte> datagram) override {
    if (destination >= static_cast<int>(channel_.queues_.size())) {
      throw InputError("datagram: no endpoint " + std::to_string(destination));
    }
    deliver(destination, std::move(datagram));
    return true;
  }

  // A copy in every other queue: threads share no network to save a send on.
  bool transmit_to_group(std::vector<std::byte> datagram) override {
    const int endpoints = static_cast<int>(channel_.queues_.size());
    for (int member = 0; member < endpoints; ++member) {
      if (member != rank()) deliver(member, datagram);
    }
    return true;
  }

  void deliver(int destination, std::vector<std::byte> datagram) {
    Queue& queue = *channel_.queues_[static_cast<std::size_t>(destination)];
    {
      const std::lock_guard lock(queue.mutex);
      if (queue.datagrams.size() >= channel_.queue_datagrams_) {
        ++queue.overflows;  // on the wire, lost at the receiver: the ledger sees the gap
        return;
      }
      queue.datagrams.push_back({std::move(datagram), rank()});
    }
    queue.arrived.notify_one();
  }

  std::optional<Arrival> next_datagram(double timeout_s) override {
    Queue& queue = *channel_.queues_[static_cast<std::size_t>(rank())];
    std::unique_lock lock(queue.mutex);
    if (!queue.arrived.wait_for(lock, std::chrono::duration<double>(timeout_s),
                                [&] { return !queue.datagrams.empty(); })) {
      return std::nullopt;
    }
    Arrival arrival = std::move(queue.datagrams.front());
    queue.datagrams.pop_front();
    return arrival;
  }

 public:
  std::uint64_t receiver_drops() const override { return channel_.overflows(rank()); }

 private:
  InProcessDatagrams& channel_;
};

InProcessDatagrams::InProcessDatagrams(int endpoints, std::size_t queue_datagrams, const std::optional<LossModel>& loss)
    : queue_datagrams_(queue_datagrams) {
  if (endpoints < 1 || queue_datagrams < 1) {
    throw InputError("in-process datagrams: need at least one endpoint and a queue of at least one datagram");
  }
  const DatagramKey key = DatagramKey::random();
  for (int r = 0; r < endpoints; ++r) {
    queues_.push_back(std::make_unique<Queue>());
    endpoints_.push_back(std::make_unique<Endpoint>(*this, r, key, loss));
  }
}

InProcessDatagrams::~InProcessDatagrams() = default;

DatagramEndpoint& InProcessDatagrams::endpoint(int rank) { return *endpoints_.at(static_cast<std::size_t>(rank)); }

std::uint64_t InProcessDatagrams::overflows(int rank) const {
  Queue& queue = *queues_.at(static_cast<std::size_t>(rank));
  const std::lock_guard lock(queue.mutex);
  return queue.overflows;
}

}  // namespace dsgd
