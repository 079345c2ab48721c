// core/datagram.hpp: the wire format round-trips; every malformed, forged, foreign, non-finite or out-of-range
// datagram is refused under its defect and writes nothing; an endpoint refuses replays and senders that are not
// the header's source; the ledger measures loss and reordering from sequence numbers in bounded memory whatever the
// jumps; the loss model drops its rate, the same datagrams every time; and the in-process channel loses exactly the
// injected datagrams (and, with a full queue, exactly what the ledger's gaps say).

#include "core/datagram.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <thread>

#include "core/error.hpp"

namespace dsgd {
namespace {

const DatagramKey kKey{{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL}, 77};

TEST(Datagram, EncodesAndDecodesAChunk) {
  const std::vector<float> floats = {1.5F, -2.0F, 3.25F};
  const ChunkHeader header{7, 3, 42, 100, 9};
  const auto datagram = encode_chunk(header, floats, kKey);
  EXPECT_EQ(datagram.size(), kDatagramOverheadBytes + 12);
  Chunk chunk;
  ASSERT_EQ(decode_chunk(datagram, 103, kKey, chunk), ChunkDefect::kNone);
  EXPECT_EQ(chunk.header.kind, 7U);
  EXPECT_EQ(chunk.header.source, 3U);
  EXPECT_EQ(chunk.header.sequence, 42U);
  EXPECT_EQ(chunk.header.offset, 100U);
  EXPECT_EQ(chunk.header.round, 9U);
  EXPECT_EQ(chunk.floats, floats);
  EXPECT_FALSE(chunk.header.group);
  EXPECT_THROW(encode_chunk(header, std::vector<float>(kMaxChunkFloats + 1), kKey), InputError);
  // A group datagram keeps its kind and says it was sent to the group; a kind cannot take the group's bit.
  ChunkHeader group = header;
  group.group = true;
  ASSERT_EQ(decode_chunk(encode_chunk(group, floats, kKey), 103, kKey, chunk), ChunkDefect::kNone);
  EXPECT_EQ(chunk.header.kind, 7U);
  EXPECT_TRUE(chunk.header.group);
  EXPECT_THROW(encode_chunk({kGroupKindBit | 7, 3, 42, 100, 9}, floats, kKey), InputError);
}

// `datagram` with its tag made right again under `key`: what a holder of the key could send.
std::vector<std::byte> resealed(std::vector<std::byte> datagram, const DatagramKey& key) {
  const std::uint64_t tag = siphash24(key.tag, std::span(datagram).first(datagram.size() - kDatagramTagBytes));
  std::memcpy(datagram.data() + datagram.size() - kDatagramTagBytes, &tag, sizeof tag);
  return datagram;
}

TEST(Datagram, RefusesMalformedForgedAndOutOfRangeChunksWithoutWritingThem) {
  const std::vector<float> floats(4, 1.0F);
  const auto good = encode_chunk({0, 1, 0, 6, 0}, floats, kKey);  // floats 6..9 of a 10-float buffer
  Chunk untouched;
  untouched.floats = {9.0F};
  auto check = [&](std::vector<std::byte> datagram, std::size_t buffer, ChunkDefect expected) {
    Chunk chunk = untouched;
    EXPECT_EQ(decode_chunk(datagram, buffer, kKey, chunk), expected) << to_string(expected);
    EXPECT_EQ(chunk.floats, untouched.floats) << "a refused datagram wrote the chunk (" << to_string(expected) << ")";
  };
  check({good.begin(), good.begin() + kDatagramOverheadBytes - 1}, 10, ChunkDefect::kShort);
  auto foreign = good;
  foreign[0] = std::byte{0};
  check(foreign, 10, ChunkDefect::kBadMagic);
  check({good.begin(), good.end() - 4}, 10, ChunkDefect::kWrongLength);  // a float short of its count
  auto longer = good;
  longer.push_back(std::byte{0});
  check(longer, 10, ChunkDefect::kWrongLength);
  // Another run's datagram, and one of this run altered after tagging: a header field, a float, the tag.
  DatagramKey other = kKey;
  other.nonce = 78;
  check(encode_chunk({0, 1, 0, 6, 0}, floats, other), 10, ChunkDefect::kForeignRun);
  other = kKey;
  other.tag.k1 ^= 1;
  check(encode_chunk({0, 1, 0, 6, 0}, floats, other), 10, ChunkDefect::kBadTag);  // right nonce, wrong key
  for (const std::size_t at : {std::size_t{8}, std::size_t{16}, kDatagramHeaderBytes + 5, good.size() - 1}) {
    auto altered = good;
    altered[at] ^= std::byte{0x10};
    check(altered, 10, ChunkDefect::kBadTag);
  }
  check(good, 9, ChunkDefect::kOutOfRange);                                       // 6 + 4 > 9
  check(encode_chunk({0, 1, 0, 11, 0}, {}, kKey), 10, ChunkDefect::kOutOfRange);  // an empty chunk past the end
  check(encode_chunk({0, 1, 0, ~std::uint64_t{0} - 1, 0}, floats, kKey), 10, ChunkDefect::kOutOfRange);  // overflow
  // Non-finite floats are refused even under the right key: a diverged peer must not spread them.
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    std::vector<float> poisoned = floats;
    poisoned[2] = bad;
    check(encode_chunk({0, 1, 0, 6, 0}, poisoned, kKey), 10, ChunkDefect::kNonFinite);
  }
  Chunk chunk;
  EXPECT_EQ(decode_chunk(good, 10, kKey, chunk), ChunkDefect::kNone);
  EXPECT_EQ(decode_chunk(resealed(good, kKey), 10, kKey, chunk), ChunkDefect::kNone) << "resealing is the identity";
  // A header-only datagram (a size-only simulation) is tagged too.
  const auto header_only = encode_header({0, 1, 0, 6, 0}, 4, kKey);
  EXPECT_EQ(header_only.size(), kDatagramOverheadBytes);
  EXPECT_EQ(decode_chunk(header_only, 10, kKey, chunk, true), ChunkDefect::kNone);
  EXPECT_EQ(chunk.count, 4U);
  auto forged_header = header_only;
  forged_header[24] ^= std::byte{1};
  EXPECT_EQ(decode_chunk(forged_header, 10, kKey, chunk, true), ChunkDefect::kBadTag);
}

TEST(Datagram, LedgerCountsGapsLateArrivalsAndRefusesRepeats) {
  ReceiveLedger ledger;
  std::vector<bool> accepted;
  for (const std::uint64_t sequence : {0, 1, 4, 2, 2, 7, 0}) accepted.push_back(ledger.accept({0, 5, sequence, 0, 0}));
  EXPECT_EQ(accepted, (std::vector<bool>{true, true, true, true, false, true, false}));
  EXPECT_TRUE(ledger.accept({0, 6, 0, 0, 0}));
  // Source 5 sent 0..7: 3, 5 and 6 are missing, 2 came late; the second 2 and the second 0 were refused.
  EXPECT_EQ(ledger.received_count(), 6U);
  EXPECT_EQ(ledger.missing(), 3U);
  EXPECT_EQ(ledger.reordered(), 1U);
  EXPECT_DOUBLE_EQ(ledger.loss_rate(), 3.0 / 9.0);
  // Filling a gap's middle splits it; its ends shrink it.
  EXPECT_TRUE(ledger.accept({0, 5, 20, 0, 0}));  // gaps 3, 5-6, 8-19
  EXPECT_TRUE(ledger.accept({0, 5, 12, 0, 0}));
  EXPECT_TRUE(ledger.accept({0, 5, 8, 0, 0}));
  EXPECT_TRUE(ledger.accept({0, 5, 19, 0, 0}));
  EXPECT_FALSE(ledger.accept({0, 5, 12, 0, 0}));
  EXPECT_EQ(ledger.missing(), 1U + 2U + 12U - 3U);
  EXPECT_EQ(ledger.gap_ranges(), 4U);  // 3, 5-6, 9-11, 13-18
  ledger.refuse(ChunkDefect::kOutOfRange);
  EXPECT_EQ(ledger.refused(ChunkDefect::kOutOfRange), 1U);
  EXPECT_EQ(ledger.refused_total(), 1U);
}

TEST(Datagram, ForgedSequenceJumpsCostTheLedgerNoMemory) {
  // 200 datagrams jumping 2^20 each (a probe that grew a rank by 1.6 GB when gaps were single entries): one range
  // each. Past kMaxGaps ranges the oldest are given up, still counted missing, so memory stays bounded.
  ReceiveLedger ledger;
  for (std::uint64_t k = 1; k <= 200; ++k) ASSERT_TRUE(ledger.accept({0, 1, k << 20, 0, 0}));
  EXPECT_EQ(ledger.gap_ranges(), 200U);
  EXPECT_EQ(ledger.missing(), (std::uint64_t{200} << 20) - 199);
  for (std::uint64_t k = 0; k < 3 * ReceiveLedger::kMaxGaps; ++k) ASSERT_TRUE(ledger.accept({0, 2, 2 * k, 0, 0}));
  EXPECT_EQ(ledger.gap_ranges(), 200U + ReceiveLedger::kMaxGaps);
  EXPECT_EQ(ledger.missing(), (std::uint64_t{200} << 20) - 199 + 3 * ReceiveLedger::kMaxGaps - 1);
  EXPECT_FALSE(ledger.accept({0, 2, 1, 0, 0})) << "a given-up gap is refused, as a repeat";
  EXPECT_TRUE(ledger.accept({0, 2, 2 * (3 * ReceiveLedger::kMaxGaps - 1) - 1, 0, 0})) << "a kept gap fills";
}

// An endpoint fed by the test: each datagram arrives with the sender the test names.
class ScriptedEndpoint final : public DatagramEndpoint {
 public:
  explicit ScriptedEndpoint(int rank) : DatagramEndpoint(rank, kKey, std::nullopt) {}
  std::vector<Arrival> script;

 protected:
  bool transmit(int, std::vector<std::byte>) override { return true; }
  bool transmit_to_group(std::vector<std::byte>) override { return true; }
  std::optional<Arrival> next_datagram(double) override {
    if (script.empty()) return std::nullopt;
    Arrival next = std::move(script.front());
    script.erase(script.begin());
    return next;
  }
};

TEST(Datagram, AnEndpointRefusesReplaysAndSendersThatAreNotTheSource) {
  ScriptedEndpoint endpoint(0);
  const std::vector<float> floats(4, 1.0F);
  const auto first = encode_chunk({1, 2, 0, 0, 0}, floats, kKey);
  const auto second = encode_chunk({1, 2, 1, 0, 0}, floats, kKey);
  endpoint.script = {{first, 2}, {first, 2}, {second, 3}, {second, kUnknownSender}, {second, 2}, {first, 2}};
  std::vector<std::uint64_t> received;
  while (const auto chunk = endpoint.receive(4, 0)) received.push_back(chunk->header.sequence);
  EXPECT_EQ(received, (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(endpoint.ledger().refused(ChunkDefect::kReplayed), 2U);
  EXPECT_EQ(endpoint.ledger().refused(ChunkDefect::kForeignSender), 2U);
  EXPECT_EQ(endpoint.ledger().received_count(), 2U);
}

TEST(Datagram, LossModelDropsItsRateTheSameDatagramsEveryTime) {
  const LossModel loss(0.1, 7);
  const LossModel again(0.1, 7);
  const LossModel other(0.1, 8);
  const int n = 100000;
  int dropped = 0;
  int differ = 0;
  for (int s = 0; s < n; ++s) {
    const bool drop = loss.drops(1, 2, static_cast<std::uint64_t>(s));
    dropped += drop ? 1 : 0;
    EXPECT_EQ(drop, again.drops(1, 2, static_cast<std::uint64_t>(s)));
    differ += drop != other.drops(1, 2, static_cast<std::uint64_t>(s)) ? 1 : 0;
  }
  // Binomial(100000, 0.1): sigma = 95.
  EXPECT_NEAR(dropped, 10000, 5 * 95);
  EXPECT_GT(differ, 1000) << "another seed, other datagrams";
  EXPECT_FALSE(LossModel(0.0, 1).drops(0, 1, 5));
  EXPECT_TRUE(LossModel(1.0, 1).drops(0, 1, 5));
  EXPECT_THROW(LossModel(1.5, 1), InputError);
}

TEST(Datagram, InProcessChannelLosesExactlyTheInjectedDatagrams) {
  const LossModel loss(0.1, 3);
  InProcessDatagrams channel(2, 100000, loss);
  const int n = 2000;
  std::set<std::uint64_t> expected;
  const std::vector<float> floats(16, 0.5F);
  for (int s = 0; s < n; ++s) {
    const bool sent = channel.endpoint(0).send(1, 1, 0, 0, floats.data(), floats.size()) == SendOutcome::kSent;
    EXPECT_EQ(sent, !loss.drops(0, 1, static_cast<std::uint64_t>(s)));
    if (sent) expected.insert(static_cast<std::uint64_t>(s));
  }
  std::set<std::uint64_t> received;
  while (auto chunk = channel.endpoint(1).receive(16, 0.05)) received.insert(chunk->header.sequence);
  EXPECT_EQ(received, expected);
  EXPECT_EQ(channel.endpoint(0).injected_drops(), static_cast<std::uint64_t>(n) - expected.size());
  EXPECT_NEAR(static_cast<double>(channel.endpoint(0).injected_drops()) / n, 0.1, 0.02);
}

// The sequences of `sent` that `loss` keeps for receiver `member` (at the receiver: group datagrams' own stream).
std::set<std::uint64_t> kept_for(const LossModel& loss, std::uint32_t source, std::uint32_t member, int sent,
                                 bool group) {
  std::set<std::uint64_t> kept;
  for (std::uint64_t s = 0; s < static_cast<std::uint64_t>(sent); ++s) {
    if (!loss.drops(source, member, group ? s | 1ULL << 63 : s)) kept.insert(s);
  }
  return kept;
}

TEST(Datagram, AGroupSendReachesEveryOtherEndpointLosingEachMembersOwnDrops) {
  // Rank 1 sends 600 datagrams to its group and, between them, 60 to rank 2 alone: each member gets the group's
  // sequences its own link kept, rank 2 the unicast ones too, counted apart (no false gaps), and rank 1 none.
  const LossModel loss(0.2, 9);
  InProcessDatagrams channel(4, 100000, loss);
  const std::vector<float> floats(8, 1.0F);
  const int group_sends = 600;
  const int unicast_sends = 60;
  for (int s = 0; s < group_sends; ++s) {
    EXPECT_EQ(channel.endpoint(1).send_to_group(3, 0, 0, floats.data(), floats.size()), SendOutcome::kSent);
    if (s % 10 == 0) channel.endpoint(1).send(2, 3, 0, 0, floats.data(), floats.size());
  }
  EXPECT_EQ(channel.endpoint(1).sent() + channel.endpoint(1).injected_drops(),
            static_cast<std::uint64_t>(group_sends + unicast_sends));
  EXPECT_FALSE(channel.endpoint(1).sends_group_once());
  EXPECT_FALSE(channel.endpoint(1).receive(8, 0.01)) << "a sender is no member of its own group";
  for (const std::uint32_t member : {0U, 2U, 3U}) {
    DatagramEndpoint& endpoint = channel.endpoint(static_cast<int>(member));
    std::set<std::uint64_t> group;
    std::set<std::uint64_t> unicast;
    while (auto chunk = endpoint.receive(8, 0.01))
      (chunk->header.group ? group : unicast).insert(chunk->header.sequence);
    const auto kept = kept_for(loss, 1, member, group_sends, true);
    EXPECT_EQ(group, kept) << "member " << member;
    EXPECT_EQ(unicast, member == 2 ? kept_for(loss, 1, 2, unicast_sends, false) : std::set<std::uint64_t>{});
    EXPECT_EQ(endpoint.injected_drops(), static_cast<std::uint64_t>(group_sends) - kept.size()) << member;
    // Every gap the ledger sees is a drop of the model's (drops after the last arrival are not yet gaps).
    const auto below_last = [](const std::set<std::uint64_t>& got) { return got.empty() ? 0 : *got.rbegin() + 1; };
    const std::uint64_t gaps = below_last(group) - group.size() + below_last(unicast) - unicast.size();
    EXPECT_EQ(endpoint.ledger().missing(), gaps) << member;
  }
  // The members' drops are their own: member 0 and member 3 lose different datagrams.
  EXPECT_NE(kept_for(loss, 1, 0, group_sends, true), kept_for(loss, 1, 3, group_sends, true));
}

TEST(Datagram, InProcessQueueOverflowIsLossTheLedgerMeasures) {
  InProcessDatagrams channel(2, 10, std::nullopt);
  const std::vector<float> floats(4, 1.0F);
  for (int s = 0; s < 25; ++s)
    EXPECT_EQ(channel.endpoint(0).send(1, 0, 0, 0, floats.data(), floats.size()), SendOutcome::kSent);
  EXPECT_EQ(channel.overflows(1), 15U);
  int received = 0;
  while (channel.endpoint(1).receive(4, 0.01)) ++received;
  EXPECT_EQ(received, 10);
  // The queue kept 0..9; 10..24 were dropped, and no later sequence arrived to reveal them as gaps.
  EXPECT_EQ(channel.endpoint(1).ledger().missing(), 0U);
  EXPECT_EQ(channel.endpoint(0).send(1, 0, 0, 0, floats.data(), floats.size()),
            SendOutcome::kSent);  // sequence 25 reveals 15 gaps
  ASSERT_TRUE(channel.endpoint(1).receive(4, 0.01));
  EXPECT_EQ(channel.endpoint(1).ledger().missing(), 15U);
}

}  // namespace
}  // namespace dsgd
