// measure/udp/udp_datagrams.hpp over real UDP sockets on the loopback interface: a paced stream with 10% injected
// loss arrives as exactly the datagrams the loss model kept; a burst into a small receive buffer loses datagrams
// that the kernel's own counter and the sequence gaps both count, equally; a foreign datagram is refused and
// counted.

#include "measure/udp/udp_datagrams.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <thread>
#include <utility>

namespace dsgd::measure::udp {
namespace {

TEST(UdpDatagrams, LosesExactlyTheInjectedDatagramsOnLoopback) {
  UdpOptions sender_options;
  sender_options.loss = LossModel(0.1, 11);
  sender_options.send_rate_Bps = 50e6;  // 50 MB/s: far below what loopback and a 4 MiB buffer absorb
  UdpEndpoint sender(0, sender_options);
  UdpEndpoint receiver(1, UdpOptions{});
  sender.set_peers({sender.port(), receiver.port()});
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
  for (int r = 0; r < 3; ++r) endpoints.push_back(std::make_unique<UdpEndpoint>(r, options));
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
  for (int r = 0; r < 3; ++r) endpoints.push_back(std::make_unique<UdpEndpoint>(r, UdpOptions{}));
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
  UdpEndpoint sender(0, UdpOptions{});
  UdpEndpoint receiver(1, small);
  sender.set_peers({sender.port(), receiver.port()});
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

TEST(UdpDatagrams, AForeignDatagramIsRefusedAndCounted) {
  UdpEndpoint receiver(1, UdpOptions{});
  const int raw = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(raw, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(receiver.port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const char junk[] = "not a dogwild datagram, long enough to pass the header size check";
  ASSERT_GT(::sendto(raw, junk, sizeof junk, 0, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const auto out_of_range = encode_chunk({0, 0, 0, 90, 0}, std::vector<float>(20, 1.0F));
  ASSERT_GT(
      ::sendto(raw, out_of_range.data(), out_of_range.size(), 0, reinterpret_cast<sockaddr*>(&address), sizeof address),
      0);
  const auto good = encode_chunk({0, 0, 1, 0, 0}, std::vector<float>(20, 1.0F));
  ASSERT_GT(::sendto(raw, good.data(), good.size(), 0, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ::close(raw);
  const auto chunk = receiver.receive(100, 2.0);
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->header.sequence, 1U);
  EXPECT_EQ(receiver.ledger().refused(ChunkDefect::kBadMagic), 1U);
  EXPECT_EQ(receiver.ledger().refused(ChunkDefect::kOutOfRange), 1U);
  EXPECT_FALSE(receiver.receive(100, 0.05)) << "nothing more arrives: a timeout, not a hang";
}

}  // namespace
}  // namespace dsgd::measure::udp
