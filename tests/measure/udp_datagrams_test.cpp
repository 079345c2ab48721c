// measure/udp/udp_datagrams.hpp over real UDP sockets on the loopback interface: a paced stream with 10% injected
// loss arrives as exactly the datagrams the loss model kept; a burst into a small receive buffer loses datagrams
// that the kernel's own counter and the sequence gaps both count, equally; junk, another run's, forged, poisoned and
// foreign-sender datagrams are refused and counted by cause, unicast and to a multicast group; and a genuine
// datagram replayed from the peer's own address (a raw socket, as root) is refused as replayed.

#include "measure/udp/udp_datagrams.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <utility>

namespace dsgd::measure::udp {
namespace {

const DatagramKey kKey = DatagramKey::random();

TEST(UdpDatagrams, LosesExactlyTheInjectedDatagramsOnLoopback) {
  UdpOptions sender_options;
  sender_options.loss = LossModel(0.1, 11);
  sender_options.send_rate_Bps = 50e6;  // 50 MB/s: far below what loopback and a 4 MiB buffer absorb
  UdpEndpoint sender(0, kKey, sender_options);
  UdpEndpoint receiver(1, kKey, UdpOptions{});
  for (UdpEndpoint* endpoint : {&sender, &receiver}) endpoint->set_peers({sender.port(), receiver.port()});
  const int n = 3000;
  const std::vector<float> floats(256, 2.0F);
  std::set<std::uint64_t> received;
  std::thread reader([&] {
    while (auto chunk = receiver.receive(256, 0.5)) received.insert(chunk->header.sequence);
  });
  std::set<std::uint64_t> expected;
  for (int s = 0; s < n; ++s) {
    if (sender.send(1, 0, 0, 0, floats.data(), floats.size()) == SendOutcome::kSent)
      expected.insert(static_cast<std::uint64_t>(s));
  }
  reader.join();
  std::printf("udp loopback: %zu of %d sent after %llu injected drops, %zu received, kernel drops %llu, buffer %d B\n",
              expected.size(), n, static_cast<unsigned long long>(sender.injected_drops()), received.size(),
              static_cast<unsigned long long>(receiver.kernel_drops()), receiver.receive_buffer_bytes());
  ASSERT_EQ(receiver.kernel_drops(), 0U) << "the paced stream overflowed the receive buffer";
  EXPECT_EQ(received, expected);
  EXPECT_EQ(sender.injected_drops() + expected.size(), static_cast<std::uint64_t>(n));
  EXPECT_EQ(sender.send_refusals(), 0U);
}

// Every sequence `endpoint` receives until it is quiet for 0.5 s, and whether one arrived twice.
std::pair<std::set<std::uint64_t>, bool> receive_all(UdpEndpoint& endpoint, std::size_t floats) {
  std::set<std::uint64_t> received;
  bool twice = false;
  while (auto chunk = endpoint.receive(floats, 0.5)) twice |= !received.insert(chunk->header.sequence).second;
  return {received, twice};
}

TEST(UdpDatagrams, AGroupSendGoesOutOnceAndReachesEveryOtherMemberOnce) {
  if (const auto& why = multicast_on_loopback()) GTEST_SKIP() << "no IP multicast on 127.0.0.1 here: " << *why;
  UdpOptions options;
  options.multicast = true;
  options.send_rate_Bps = 50e6;
  std::vector<std::unique_ptr<UdpEndpoint>> endpoints;
  for (int r = 0; r < 3; ++r) endpoints.push_back(std::make_unique<UdpEndpoint>(r, kKey, options));
  for (auto& endpoint : endpoints)
    endpoint->set_peers({endpoints[0]->port(), endpoints[1]->port(), endpoints[2]->port()});
  EXPECT_TRUE(endpoints[0]->sends_group_once());
  EXPECT_EQ(endpoints[0]->group_delivery(), "ip multicast on 127.0.0.1");
  const int n = 1000;
  std::pair<std::set<std::uint64_t>, bool> received[2];
  std::thread readers[2];
  for (int m = 0; m < 2; ++m) readers[m] = std::thread([&, m] { received[m] = receive_all(*endpoints[m + 1], 256); });
  const std::vector<float> floats(256, 1.0F);
  for (int s = 0; s < n; ++s) ASSERT_EQ(endpoints[0]->send_to_group(1, 0, 0, floats.data(), 256), SendOutcome::kSent);
  for (auto& reader : readers) reader.join();
  std::printf("ip multicast on loopback: %d datagrams sent once, received %zu and %zu, kernel drops %llu and %llu\n", n,
              received[0].first.size(), received[1].first.size(),
              static_cast<unsigned long long>(endpoints[1]->kernel_drops()),
              static_cast<unsigned long long>(endpoints[2]->kernel_drops()));
  EXPECT_EQ(endpoints[0]->sent(), static_cast<std::uint64_t>(n)) << "one send per datagram";
  for (int m = 0; m < 2; ++m) {
    EXPECT_EQ(received[m].first.size(), static_cast<std::size_t>(n)) << "member " << m + 1;
    EXPECT_FALSE(received[m].second) << "member " << m + 1 << " received a datagram twice";
  }
  EXPECT_FALSE(endpoints[0]->receive(256, 0.1)) << "the sender is no member of its own group";
}

TEST(UdpDatagrams, WithoutMulticastAGroupSendIsOneSendtoPerMember) {
  std::vector<std::unique_ptr<UdpEndpoint>> endpoints;
  for (int r = 0; r < 3; ++r) endpoints.push_back(std::make_unique<UdpEndpoint>(r, kKey, UdpOptions{}));
  for (auto& endpoint : endpoints)
    endpoint->set_peers({endpoints[0]->port(), endpoints[1]->port(), endpoints[2]->port()});
  EXPECT_FALSE(endpoints[2]->sends_group_once());
  EXPECT_NE(endpoints[2]->group_delivery().find("not asked for"), std::string::npos) << endpoints[2]->group_delivery();
  const std::vector<float> floats(16, 1.0F);
  for (int s = 0; s < 50; ++s) ASSERT_EQ(endpoints[2]->send_to_group(1, 0, 0, floats.data(), 16), SendOutcome::kSent);
  for (int m = 0; m < 2; ++m) {
    const auto [received, twice] = receive_all(*endpoints[m], 16);
    EXPECT_EQ(received.size(), 50U) << "member " << m;
    EXPECT_FALSE(twice);
  }
}

TEST(UdpDatagrams, KernelDropsOfAFullReceiveBufferAreCountedAndSeenAsGaps) {
  UdpOptions small;
  small.receive_buffer_bytes = 16384;
  UdpEndpoint sender(0, kKey, UdpOptions{});
  UdpEndpoint receiver(1, kKey, small);
  for (UdpEndpoint* endpoint : {&sender, &receiver}) endpoint->set_peers({sender.port(), receiver.port()});
  const std::vector<float> floats(1000, 1.0F);  // 4 KB each: a few fill the buffer
  const int n = 200;
  int handed = 0;
  for (int s = 0; s < n; ++s) {
    handed += sender.send(1, 0, 0, 0, floats.data(), floats.size()) == SendOutcome::kSent ? 1 : 0;
  }
  int received = 0;
  while (receiver.receive(1000, 0.2)) ++received;
  const std::uint64_t dropped = receiver.kernel_drops();
  std::printf("burst of %d x 4 KB into a %d B buffer: %d received, kernel drops %llu, gaps %llu\n", handed,
              receiver.receive_buffer_bytes(), received, static_cast<unsigned long long>(dropped),
              static_cast<unsigned long long>(receiver.ledger().missing()));
  EXPECT_GT(dropped, 0U);
  EXPECT_EQ(static_cast<std::uint64_t>(received) + dropped, static_cast<std::uint64_t>(handed));
  // The drops show as gaps once a later sequence arrives: the sequence gaps measure the same loss.
  ASSERT_EQ(sender.send(1, 0, 0, 0, floats.data(), floats.size()), SendOutcome::kSent);
  ASSERT_TRUE(receiver.receive(1000, 2.0));
  EXPECT_EQ(receiver.ledger().missing(), dropped);
}

// Sends `bytes` from a fresh socket of this process (any local user can) to `address`:`port`, a multicast group's
// on 127.0.0.1 as its members joined it.
void send_from_stranger(const std::vector<std::byte>& bytes, std::uint32_t address, std::uint16_t port) {
  const int raw = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(raw, 0);
  const in_addr interface { htonl(INADDR_LOOPBACK) };
  ASSERT_EQ(::setsockopt(raw, IPPROTO_IP, IP_MULTICAST_IF, &interface, sizeof interface), 0);
  const sockaddr_in to = socket_address(address, port);
  EXPECT_GT(::sendto(raw, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
  ::close(raw);
}

// What a local attacker sends a rank: junk, another run's datagram, one forged without the key, NaNs under the
// right key (as a diverged peer would), and a genuine datagram re-sent from its own socket. Each is refused under
// its cause; only the sender's own datagram arrives.
TEST(UdpDatagrams, JunkForgedPoisonedAndStrangersDatagramsAreRefusedByCause) {
  UdpEndpoint sender(0, kKey, UdpOptions{});
  UdpEndpoint receiver(1, kKey, UdpOptions{});
  for (UdpEndpoint* endpoint : {&sender, &receiver}) endpoint->set_peers({sender.port(), receiver.port()});
  const std::vector<float> floats(20, 1.0F);
  const std::uint32_t to = INADDR_LOOPBACK;
  const char junk[] = "not a dogwild datagram, long enough to pass the header size check";
  send_from_stranger({reinterpret_cast<const std::byte*>(junk), reinterpret_cast<const std::byte*>(junk) + sizeof junk},
                     to, receiver.port());
  DatagramKey other_run = DatagramKey::random();
  send_from_stranger(encode_chunk({0, 0, 5, 0, 0}, floats, other_run), to, receiver.port());
  other_run.nonce = kKey.nonce;  // the nonce is public (it is on the wire); the key is not
  send_from_stranger(encode_chunk({0, 0, 6, 0, 0}, floats, other_run), to, receiver.port());
  std::vector<float> poisoned = floats;
  poisoned[3] = std::nanf("");
  send_from_stranger(encode_chunk({0, 0, 7, 0, 0}, poisoned, kKey), to, receiver.port());
  send_from_stranger(encode_chunk({0, 0, 8, 0, 0}, floats, kKey), to, receiver.port());  // copied, not sent by 0
  ASSERT_EQ(sender.send(1, 0, 0, 0, floats.data(), floats.size()), SendOutcome::kSent);
  const auto chunk = receiver.receive(100, 2.0);
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->header.sequence, 0U);
  EXPECT_FALSE(receiver.receive(100, 0.05)) << "nothing more arrives: a timeout, not a hang";
  const ReceiveLedger& ledger = receiver.ledger();
  EXPECT_EQ(ledger.refused(ChunkDefect::kBadMagic), 1U);
  EXPECT_EQ(ledger.refused(ChunkDefect::kForeignRun), 1U);
  EXPECT_EQ(ledger.refused(ChunkDefect::kBadTag), 1U);
  EXPECT_EQ(ledger.refused(ChunkDefect::kNonFinite), 1U);
  EXPECT_EQ(ledger.refused(ChunkDefect::kForeignSender), 1U);
  EXPECT_EQ(ledger.refused_total(), 5U);
  EXPECT_EQ(ledger.missing(), 0U) << "refused datagrams never reach the sequence ledger";
}

TEST(UdpDatagrams, ForgedDatagramsToAMulticastGroupAreRefused) {
  if (const auto& why = multicast_on_loopback()) GTEST_SKIP() << "no IP multicast on 127.0.0.1 here: " << *why;
  UdpOptions options;
  options.multicast = true;
  UdpEndpoint master(0, kKey, options);
  UdpEndpoint slave(1, kKey, options);
  for (UdpEndpoint* endpoint : {&master, &slave}) endpoint->set_peers({master.port(), slave.port()});
  // Any local process may send to (and join) master's group: a forgery without the key, and a copy of a genuine
  // group datagram re-sent from a stranger's socket.
  const std::vector<float> floats(20, 1.0F);
  ChunkHeader header{0, 0, 0, 0, 0};
  header.group = true;
  DatagramKey forger = DatagramKey::random();
  forger.nonce = kKey.nonce;
  send_from_stranger(encode_chunk(header, std::vector<float>(20, std::nanf("")), forger), group_address(master.port()),
                     master.port());
  header.sequence = 1;
  send_from_stranger(encode_chunk(header, floats, kKey), group_address(master.port()), master.port());
  ASSERT_EQ(master.send_to_group(0, 0, 0, floats.data(), floats.size()), SendOutcome::kSent);
  const auto chunk = slave.receive(100, 2.0);
  ASSERT_TRUE(chunk);
  EXPECT_TRUE(chunk->header.group);
  EXPECT_EQ(chunk->header.sequence, 0U);
  EXPECT_FALSE(slave.receive(100, 0.05));
  EXPECT_EQ(slave.ledger().refused(ChunkDefect::kBadTag), 1U);
  EXPECT_EQ(slave.ledger().refused(ChunkDefect::kForeignSender), 1U);
  EXPECT_EQ(slave.ledger().missing(), 0U);
}

// Sends `payload` as a UDP datagram whose source is 127.0.0.1:`from_port` (a raw socket: root's power to spoof).
// False where raw sockets are not allowed.
bool send_spoofed(std::uint16_t from_port, std::uint16_t to_port, const std::vector<std::byte>& payload) {
  const int raw = ::socket(AF_INET, SOCK_RAW, IPPROTO_UDP);
  if (raw < 0) return false;
  std::vector<std::byte> packet(sizeof(udphdr) + payload.size());
  udphdr header{};
  header.source = htons(from_port);
  header.dest = htons(to_port);
  header.len = htons(static_cast<std::uint16_t>(packet.size()));
  header.check = 0;  // none: allowed over IPv4
  std::memcpy(packet.data(), &header, sizeof header);
  std::memcpy(packet.data() + sizeof header, payload.data(), payload.size());
  const sockaddr_in to = socket_address(INADDR_LOOPBACK, to_port);
  const bool sent =
      ::sendto(raw, packet.data(), packet.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) > 0;
  ::close(raw);
  return sent;
}

// The last line of defence when the address checks are beaten: root, spoofing the sender's own port, replays a
// genuine datagram and forges one. The replay is refused by its sequence, the forgery by its tag.
TEST(UdpDatagrams, AGenuineDatagramReplayedFromThePeersOwnPortIsRefused) {
  UdpEndpoint sender(0, kKey, UdpOptions{});
  UdpEndpoint receiver(1, kKey, UdpOptions{});
  for (UdpEndpoint* endpoint : {&sender, &receiver}) endpoint->set_peers({sender.port(), receiver.port()});
  const std::vector<float> floats(20, 1.0F);
  ASSERT_EQ(sender.send(1, 0, 0, 0, floats.data(), floats.size()), SendOutcome::kSent);
  ASSERT_TRUE(receiver.receive(100, 2.0));
  const auto genuine = encode_chunk({0, 0, 0, 0, 0}, floats, kKey);  // what went over the wire
  if (!send_spoofed(sender.port(), receiver.port(), genuine)) GTEST_SKIP() << "no raw sockets here (needs root)";
  DatagramKey forger = DatagramKey::random();
  forger.nonce = kKey.nonce;
  ASSERT_TRUE(send_spoofed(sender.port(), receiver.port(), encode_chunk({0, 0, 1, 0, 0}, floats, forger)));
  EXPECT_FALSE(receiver.receive(100, 0.5));
  EXPECT_EQ(receiver.ledger().refused(ChunkDefect::kReplayed), 1U);
  EXPECT_EQ(receiver.ledger().refused(ChunkDefect::kBadTag), 1U);
  EXPECT_EQ(receiver.ledger().received_count(), 1U);
}

}  // namespace
}  // namespace dsgd::measure::udp
