#include "core/datagram.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
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

constexpr EnumNames<5> kDefectNames = {"none", "short", "bad magic", "wrong length", "out of range"};

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

std::vector<std::byte> encode_header(const ChunkHeader& header, std::size_t count) {
  if (count > kMaxChunkFloats) {
    throw InputError("datagram: a chunk of " + std::to_string(count) + " floats exceeds one datagram (" +
                     std::to_string(kMaxChunkFloats) + " floats)");
  }
  std::vector<std::byte> out(kDatagramHeaderBytes);
  put(out.data(), 0, kDatagramMagic);
  if (header.kind >= kGroupKindBit) {
    throw InputError("datagram: kind " + std::to_string(header.kind) + " takes the group bit (kinds are < 2^31)");
  }
  put(out.data(), 4, header.kind | (header.group ? kGroupKindBit : 0U));
  put(out.data(), 8, header.source);
  put(out.data(), 12, static_cast<std::uint32_t>(count));
  put(out.data(), 16, header.sequence);
  put(out.data(), 24, header.offset);
  put(out.data(), 32, header.round);
  return out;
}

std::vector<std::byte> encode_chunk(const ChunkHeader& header, std::span<const float> floats) {
  std::vector<std::byte> out = encode_header(header, floats.size());
  if (!floats.empty()) {
    out.resize(kDatagramHeaderBytes + floats.size_bytes());
    std::memcpy(out.data() + kDatagramHeaderBytes, floats.data(), floats.size_bytes());
  }
  return out;
}

ChunkDefect decode_chunk(std::span<const std::byte> datagram, std::size_t buffer_floats, Chunk& chunk,
                         bool header_only) {
  if (datagram.size() < kDatagramHeaderBytes) return ChunkDefect::kShort;
  const std::byte* in = datagram.data();
  if (get<std::uint32_t>(in, 0) != kDatagramMagic) return ChunkDefect::kBadMagic;
  const auto count = get<std::uint32_t>(in, 12);
  const std::size_t floats = header_only ? 0 : std::size_t{count};
  if (datagram.size() != kDatagramHeaderBytes + floats * sizeof(float)) return ChunkDefect::kWrongLength;
  const auto offset = get<std::uint64_t>(in, 24);
  if (offset > buffer_floats || count > buffer_floats - offset) return ChunkDefect::kOutOfRange;
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

void ReceiveLedger::received(const ChunkHeader& header) {
  Source& source = sources_[std::uint64_t{header.source} << 1 | (header.group ? 1U : 0U)];
  const std::uint64_t sequence = header.sequence;
  if (sequence >= source.next) {
    // The sequences jumped over are missing until they arrive. A sender never skips more than it sent, but a
    // forged jump must not allocate without bound: gaps above 1 M are counted in one step.
    for (std::uint64_t s = source.next; s < sequence && s - source.next < (1U << 20); ++s) source.missing.push_back(s);
    source.next = sequence + 1;
    ++received_;
    return;
  }
  const auto it = std::lower_bound(source.missing.begin(), source.missing.end(), sequence);
  if (it == source.missing.end() || *it != sequence) {
    ++duplicates_;
    return;
  }
  source.missing.erase(it);
  ++reordered_;
  ++received_;
}

std::uint64_t ReceiveLedger::missing() const {
  std::uint64_t total = 0;
  for (const auto& [rank, source] : sources_) total += source.missing.size();
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
  auto datagram = payload_ ? encode_chunk(header, {floats, count}) : encode_header(header, count);
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
    const auto datagram = next_datagram(std::max(0.0, deadline_s - clock_s()));
    if (!datagram) return std::nullopt;
    Chunk chunk;
    const ChunkDefect defect = decode_chunk(*datagram, buffer_floats, chunk, !payload_);
    if (defect == ChunkDefect::kNone) {
      // A group datagram meets the loss model here, on this member's link; its own stream of decisions (top bit).
      if (chunk.header.group && loss_ &&
          loss_->drops(chunk.header.source, static_cast<std::uint32_t>(rank_), chunk.header.sequence | 1ULL << 63)) {
        ++injected_;
        continue;
      }
      ledger_.received(chunk.header);
      return chunk;
    }
    ledger_.refuse(defect);
  }
}

// --- in-process channel ----------------------------------------------------------------------------------------

struct InProcessDatagrams::Queue {
  std::mutex mutex;
  std::condition_variable arrived;
  std::deque<std::vector<std::byte>> datagrams;
  std::uint64_t overflows = 0;
};

class InProcessDatagrams::Endpoint final : public DatagramEndpoint {
 public:
  Endpoint(InProcessDatagrams& channel, int rank, const std::optional<LossModel>& loss)
      : DatagramEndpoint(rank, loss), channel_(channel) {}

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
      queue.datagrams.push_back(std::move(datagram));
    }
    queue.arrived.notify_one();
  }

  std::optional<std::vector<std::byte>> next_datagram(double timeout_s) override {
    Queue& queue = *channel_.queues_[static_cast<std::size_t>(rank())];
    std::unique_lock lock(queue.mutex);
    if (!queue.arrived.wait_for(lock, std::chrono::duration<double>(timeout_s),
                                [&] { return !queue.datagrams.empty(); })) {
      return std::nullopt;
    }
    std::vector<std::byte> datagram = std::move(queue.datagrams.front());
    queue.datagrams.pop_front();
    return datagram;
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
  for (int r = 0; r < endpoints; ++r) {
    queues_.push_back(std::make_unique<Queue>());
    endpoints_.push_back(std::make_unique<Endpoint>(*this, r, loss));
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
