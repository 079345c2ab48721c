#pragma once
// Unreliable, unordered messages of weight chunks (seed 002, Dogwild; issue 28): a datagram carries `count` floats
// meant for [offset, offset + count) of a receiver's buffer, and may be lost or arrive out of order, never corrupted
// and never retransmitted. This header holds what every transport shares: the wire format and its checks (a
// malformed, forged, replayed or out-of-range chunk is dropped and counted by cause, never written), the per-source
// accounting of sequence gaps, a seeded loss model, and an in-process channel for threads. Over real sockets:
// measure/udp/. Who can send and read what: docs/dogwild.md "Threat model".
//
// Wire format, little-endian, a 48-byte header, count float32, then an 8-byte tag (docs/dogwild.md "Wire format"):
//   magic u32 ("DGW2"), kind u32, source u32, count u32, sequence u64, offset u64, round u64, nonce u64, floats,
//   tag u64 = SipHash-2-4 under the run's key of every byte before it.
// kind's top bit marks a group datagram (DatagramEndpoint::send_to_group), whose sequence is the sender's to its group.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/siphash.hpp"

namespace dsgd {

inline constexpr std::uint32_t kDatagramMagic = 0x32574744;  // "DGW2"
inline constexpr std::size_t kDatagramHeaderBytes = 48;
inline constexpr std::size_t kDatagramTagBytes = 8;
// What a datagram carries besides its floats: header and tag.
inline constexpr std::size_t kDatagramOverheadBytes = kDatagramHeaderBytes + kDatagramTagBytes;
// UDP's largest payload over IPv4 (65535 - 20 - 8): header, floats and tag must fit one datagram.
inline constexpr std::size_t kMaxDatagramBytes = 65507;
inline constexpr std::size_t kMaxChunkFloats = (kMaxDatagramBytes - kDatagramOverheadBytes) / sizeof(float);
inline constexpr std::uint32_t kGroupKindBit = 0x80000000U;  // on the wire: a group datagram

// A run's secret: the key of every datagram's tag, and a nonce that names the run on the wire. One rank draws it
// from the kernel's random source and hands it to the others over the launcher's channel (MPI's messages; memory
// for threads and in simulation), never over the datagrams themselves.
struct DatagramKey {
  SipHashKey tag;
  std::uint64_t nonce = 0;
  // 24 bytes of getrandom(2). Throws IoError if the kernel gives none.
  static DatagramKey random();
};

struct ChunkHeader {
  std::uint32_t kind = 0;      // the protocol's message kind (Dogwild: master weights, slave difference), < 2^31
  std::uint32_t source = 0;    // the sender's rank
  std::uint64_t sequence = 0;  // per sender and destination (or group), from 0, +1 per datagram sent
  std::uint64_t offset = 0;    // first float of the receiver's buffer
  std::uint64_t round = 0;     // the sender's pass over its buffer
  bool group = false;          // sent once to every other endpoint (send_to_group), not to this receiver alone
};

// A chunk as received: its header, its count of floats and the floats (none from a header-only datagram).
struct Chunk {
  ChunkHeader header;
  std::uint32_t count = 0;
  std::vector<float> floats;
};

// The datagram of `header` and `floats` (at most kMaxChunkFloats) in the run of `key`, tagged, ready to send.
std::vector<std::byte> encode_chunk(const ChunkHeader& header, std::span<const float> floats, const DatagramKey& key);
// Header and tag alone, declaring `count` floats: what a size-only simulation sends (its simulated size is the
// whole).
std::vector<std::byte> encode_header(const ChunkHeader& header, std::size_t count, const DatagramKey& key);

// Why a datagram was refused: decode_chunk finds all but foreign sender and replayed, which the endpoint finds.
//   short / bad magic / wrong length  not a datagram of this format (length: header, count floats and tag)
//   foreign run     another run's nonce (e.g. a late datagram of an earlier world on a reused port)
//   bad tag         the tag does not match under the run's key: forged or altered
//   foreign sender  the transport received it from an address that is not the header's source (UDP: the peer
//                   table's address and port of that rank, and for a group socket, that group's owner)
//   replayed        a sequence already received from that source (a repeat of a genuine datagram)
//   out of range    [offset, offset + count) is not inside the receiver's buffer
//   non-finite      a NaN or infinite float: a genuine peer that diverged must not spread it
enum class ChunkDefect {
  kNone,
  kShort,
  kBadMagic,
  kWrongLength,
  kForeignRun,
  kBadTag,
  kForeignSender,
  kReplayed,
  kOutOfRange,
  kNonFinite
};
inline constexpr std::size_t kChunkDefects = 10;
std::string_view to_string(ChunkDefect defect);

// Reads a datagram for a receiver whose buffer holds `buffer_floats` floats in the run of `key`. kNone and the
// chunk, or the defect: shorter than header and tag, a foreign magic, a length that is not header, count floats and
// tag, another run's nonce, a tag that does not match, a range past the buffer (offset + count > buffer_floats,
// overflow included), or a float that is not finite. With `header_only`, the datagram is exactly header and tag
// (encode_header) and the chunk's floats stay empty. Nothing is written to `chunk` unless kNone.
ChunkDefect decode_chunk(std::span<const std::byte> datagram, std::size_t buffer_floats, const DatagramKey& key,
                         Chunk& chunk, bool header_only = false);

// A datagram as a transport delivers it, and the rank the transport saw it come from (kUnknownSender: none of the
// world's endpoints).
inline constexpr int kUnknownSender = -1;
struct Arrival {
  std::vector<std::byte> bytes;
  int sender = kUnknownSender;
};

// What a receiver saw, counted per source from the sequence numbers, and what it refused by cause. Loss is measured:
// the sequences a source sent up to the highest one seen, minus those that arrived (a late one fills its gap).
// Memory is bounded whatever the sequences: gaps are kept as ranges, at most kMaxGaps per source; past that the
// oldest gap is given up (its sequences stay missing, and one that arrives later is refused as replayed).
class ReceiveLedger {
 public:
  static constexpr std::size_t kMaxGaps = 1024;

  // Takes a datagram that passed every other check: true if its sequence is new from its source (counted received;
  // a late one fills its gap), false for one already received or given up (the caller refuses it as replayed).
  bool accept(const ChunkHeader& header);
  void refuse(ChunkDefect defect) { ++refused_[static_cast<std::size_t>(defect)]; }
  std::uint64_t received_count() const { return received_; }
  std::uint64_t reordered() const { return reordered_; }  // arrived after a higher sequence of their source
  // Sequences missing below each source's highest: lost (or still on their way).
  std::uint64_t missing() const;
  // missing / (missing + received), 0 before anything arrived.
  double loss_rate() const;
  std::uint64_t refused(ChunkDefect defect) const { return refused_[static_cast<std::size_t>(defect)]; }
  std::uint64_t refused_total() const;
  std::size_t gap_ranges() const;  // gaps held, over every source: the ledger's memory

 private:
  struct Gap {
    std::uint64_t first = 0;  // missing: [first, end)
    std::uint64_t end = 0;
  };
  struct Source {
    std::uint64_t next = 0;      // one past the highest sequence seen
    std::vector<Gap> gaps = {};  // below `next`, sorted, disjoint, none empty
    std::uint64_t given_up = 0;  // sequences of gaps dropped past kMaxGaps
  };
  static void bound(Source& source);

  std::map<std::uint64_t, Source> sources_;  // by source << 1 | group: a sender's group and unicast sequences differ
  std::uint64_t received_ = 0;
  std::uint64_t reordered_ = 0;
  std::uint64_t refused_[kChunkDefects] = {};
};

// A Bernoulli loss of probability `rate`, decided per (seed, source, destination, sequence): the same datagrams are
// lost on every run and every executor, whatever the timing.
class LossModel {
 public:
  LossModel(double rate, std::uint64_t seed);
  bool drops(std::uint32_t source, std::uint32_t destination, std::uint64_t sequence) const;
  double rate() const { return rate_; }

 private:
  double rate_;
  std::uint64_t seed_;
};

// What became of a datagram handed to DatagramEndpoint::send.
//   kSent     on its way (it may still be lost there: a full receiver drops it)
//   kLost     dropped by the injected loss model: counted, never sent, and to the sender as good as kSent (a real
//             sender cannot tell a datagram the network will lose)
//   kRefused  the transport had no room (a full send buffer): nothing left and its sequence number was not used, so
//             no receiver sees a gap; the sender may keep what it meant to send for later
enum class SendOutcome { kSent, kLost, kRefused };

// One endpoint's side of an unreliable channel: send never blocks (a full queue drops, as a kernel buffer does),
// receive waits at most `timeout_s` for the next datagram. Datagrams a LossModel drops are counted, never sent. This
// base numbers, drops, encodes, decodes and counts; a transport only moves bytes (transmit, next_datagram). One
// thread sends and one receives on an endpoint (they may differ).
class DatagramEndpoint {
 public:
  // Datagrams are tagged with, and must carry the tag of, `key` (the run's). Without `payload` (a size-only
  // simulation) datagrams carry headers only and received chunks no floats.
  DatagramEndpoint(int rank, const DatagramKey& key, std::optional<LossModel> loss, bool payload = true)
      : rank_(rank), key_(key), loss_(loss), payload_(payload) {}
  virtual ~DatagramEndpoint() = default;
  DatagramEndpoint(const DatagramEndpoint&) = delete;
  DatagramEndpoint& operator=(const DatagramEndpoint&) = delete;

  int rank() const { return rank_; }
  // Sends the `count` floats at `floats` (null without payload) to `destination` with the next sequence for it.
  SendOutcome send(int destination, std::uint32_t kind, std::uint64_t offset, std::uint64_t round, const float* floats,
                   std::size_t count);
  // Sends them once to every other endpoint of the world (multicast to the sender's group), with the next sequence
  // of the group. The loss model decides per receiver, at the receiver (each member's link loses its own): such
  // drops count in the receiver's injected_drops(). kLost is never returned.
  SendOutcome send_to_group(std::uint32_t kind, std::uint64_t offset, std::uint64_t round, const float* floats,
                            std::size_t count);
  // How the transport delivers send_to_group: "ip multicast", or "emulated (why)" where it sends one datagram per
  // member (the base's default: "one send per member").
  virtual std::string group_delivery() const { return "one send per member"; }
  // Whether send_to_group puts a datagram out once for all members (IP multicast; SimGrid's model of it).
  virtual bool sends_group_once() const { return false; }
  // The next valid chunk for a buffer of `buffer_floats`, or nullopt after `timeout_s` (0: only what has arrived,
  // without waiting); refused datagrams are counted in ledger() and skipped.
  std::optional<Chunk> receive(std::size_t buffer_floats, double timeout_s);
  const ReceiveLedger& ledger() const { return ledger_; }
  std::uint64_t injected_drops() const { return injected_; }      // the loss model's
  std::uint64_t sent() const { return sent_; }                    // handed to the transport
  std::uint64_t send_refusals() const { return refused_sends_; }  // the transport had no room (kRefused)
  // Datagrams that reached this endpoint's receive side and found no room (UDP: the kernel's count for the socket;
  // in process: the full queue's); 0 where the transport drops them elsewhere (SimGrid: at the sender).
  virtual std::uint64_t receiver_drops() const { return 0; }

 protected:
  // Puts `datagram` on the way to `destination`; false where the transport had no room. Throws InputError for a
  // destination it does not know.
  virtual bool transmit(int destination, std::vector<std::byte> datagram) = 0;
  // Puts `datagram` on the way to every other endpoint as one send; false where the transport had no room.
  virtual bool transmit_to_group(std::vector<std::byte> datagram) = 0;
  // The next datagram that arrived and who sent it, waiting at most `timeout_s`; nullopt on timeout.
  virtual std::optional<Arrival> next_datagram(double timeout_s) = 0;
  // The transport's clock for receive()'s deadline: wall time natively, simulated time in a simulation.
  virtual double clock_s() const;

 private:
  SendOutcome hand_over(std::uint64_t& sequence, const ChunkHeader& header, const float* floats, std::size_t count,
                        int destination);

  int rank_;
  DatagramKey key_;
  std::optional<LossModel> loss_;
  bool payload_;
  std::vector<std::uint64_t> sequences_;  // by destination
  std::uint64_t group_sequence_ = 0;
  ReceiveLedger ledger_;
  std::uint64_t injected_ = 0;
  std::uint64_t sent_ = 0;
  std::uint64_t refused_sends_ = 0;
};

// Datagrams between the threads of one process: a bounded queue per endpoint (`queue_datagrams`; a full queue drops
// the newest, counted as the receiver's overflow), the loss model applied at the sender, under a key drawn here.
class InProcessDatagrams {
 public:
  InProcessDatagrams(int endpoints, std::size_t queue_datagrams, const std::optional<LossModel>& loss);
  ~InProcessDatagrams();
  DatagramEndpoint& endpoint(int rank);
  std::uint64_t overflows(int rank) const;  // datagrams a full queue of `rank` refused

 private:
  class Endpoint;
  struct Queue;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::size_t queue_datagrams_;
};

}  // namespace dsgd
