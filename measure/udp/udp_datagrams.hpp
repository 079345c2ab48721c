#pragma once
// Dogwild's unreliable transport over real UDP sockets on the loopback interface (seed 002; core/datagram.hpp has
// the wire format and the accounting): one socket per endpoint bound to 127.0.0.1, datagrams sent without waiting
// (a full socket buffer drops them, as the kernel does), received with a timeout. Loss is measured twice: from the
// sequence gaps the ledger sees, and from the kernel's own count of datagrams the socket's full receive buffer
// dropped (the "drops" column of /proc/net/udp for its sockets).
//
// Group sends (multicast, docs/dogwild.md "Multicast"): each sender has an IP multicast group of its own,
// 239.255.(port >> 8).(port & 255) at its own unicast port, so groups of concurrent worlds never meet; every other
// endpoint joins it on 127.0.0.1 with a socket bound to it, and the sender sends each datagram once (loopback
// delivery, TTL 0: it never leaves the machine). Where the kernel does not deliver that (multicast_on_loopback()
// says why), a group send is emulated as one sendto per member, and group_delivery() says so.
//
// A datagram counts as from rank r only if it came from 127.0.0.1 at r's port (the peer table), and on a group
// socket only from that group's owner; any other sender is refused as "foreign sender" (docs/dogwild.md "Threat
// model").

#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/datagram.hpp"

namespace dsgd::measure::udp {

struct UdpOptions {
  // SO_RCVBUF asked for (as root SO_RCVBUFFORCE, past net.core.rmem_max); the kernel doubles it for its overhead.
  int receive_buffer_bytes = 4 << 20;
  // A token bucket on the sender: at most this many bytes of datagrams per second (0: as fast as sendto goes).
  double send_rate_Bps = 0;
  std::optional<LossModel> loss;  // injected at the sender, counted, never sent
  bool multicast = false;         // join every peer's group (set_peers), for send_to_group over IP multicast
};

// Whether this machine's kernel delivers a multicast datagram sent on 127.0.0.1 to a socket that joined its group
// there: nullopt if it does, else why not (the call that failed, or nothing arrived within 0.2 s). Probed once per
// process.
const std::optional<std::string>& multicast_on_loopback();

class UdpEndpoint final : public DatagramEndpoint {
 public:
  // Binds a socket to 127.0.0.1 on a port the kernel picks; datagrams are tagged with `key` (the run's, the same at
  // every endpoint of a world). Throws IoError naming the call that failed.
  UdpEndpoint(int rank, const DatagramKey& key, const UdpOptions& options);
  ~UdpEndpoint() override;
  UdpEndpoint(const UdpEndpoint&) = delete;
  UdpEndpoint& operator=(const UdpEndpoint&) = delete;

  std::uint16_t port() const { return port_; }
  // The receive buffer the kernel granted (getsockopt SO_RCVBUF).
  int receive_buffer_bytes() const { return receive_buffer_bytes_; }
  // Every endpoint's port, by rank (exchanged by the caller: in-process, or over a Comm). With
  // UdpOptions::multicast, also joins every other endpoint's group (IP multicast where the kernel delivers it).
  // Throws IoError naming the call that failed.
  void set_peers(std::vector<std::uint16_t> ports);

  // Datagrams the kernel dropped at this endpoint's sockets (their full receive buffers) since they were bound.
  std::uint64_t kernel_drops() const;
  std::uint64_t receiver_drops() const override { return kernel_drops(); }
  std::string group_delivery() const override;
  bool sends_group_once() const override { return ip_multicast_; }

 protected:
  bool transmit(int destination, std::vector<std::byte> datagram) override;
  bool transmit_to_group(std::vector<std::byte> datagram) override;
  std::optional<Arrival> next_datagram(double timeout_s) override;

 private:
  void pace(std::size_t bytes);
  bool send_to(std::uint32_t address, std::uint16_t port, const std::vector<std::byte>& datagram);
  int peer_at(const sockaddr_in& address) const;

  UdpOptions options_;
  int socket_ = -1;
  std::uint16_t port_ = 0;
  int receive_buffer_bytes_ = 0;
  std::vector<std::uint16_t> peers_;
  bool ip_multicast_ = false;       // group sends go out once, to this endpoint's group
  std::vector<int> group_sockets_;  // one per other endpoint's group, joined
  std::vector<int> group_owners_;   // the rank whose group each of group_sockets_ joined
  std::size_t next_socket_ = 0;     // where the next receive starts looking, for fairness
  std::vector<std::byte> scratch_;
  double bucket_start_s_ = -1;  // the token bucket's clock: when the first paced byte went
  double paced_bytes_ = 0;
};

// The "drops" count of UDP socket `socket` (found by its inode; members of one group share an address), from
// /proc/net/udp; nullopt if it is not listed.
std::optional<std::uint64_t> socket_drops(int socket);

// The multicast group of the endpoint at unicast port `port`: 239.255.(port >> 8).(port & 255), host order.
std::uint32_t group_address(std::uint16_t port);
// The IPv4 socket address of `address` (host order) and `port`.
sockaddr_in socket_address(std::uint32_t address, std::uint16_t port);

}  // namespace dsgd::measure::udp
