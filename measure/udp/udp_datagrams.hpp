#pragma once
// Dogwild's unreliable transport over real UDP sockets on the loopback interface (seed 002; core/datagram.hpp has
// the wire format and the accounting): one socket per endpoint bound to 127.0.0.1, datagrams sent without waiting
// (a full socket buffer drops them, as the kernel does), received with a timeout. Loss is measured twice: from the
// sequence gaps the ledger sees, and from the kernel's own count of datagrams the socket's full receive buffer
// dropped (the "drops" column of /proc/net/udp for the socket).

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/datagram.hpp"

namespace dsgd::measure::udp {

struct UdpOptions {
  // SO_RCVBUF asked for (as root SO_RCVBUFFORCE, past net.core.rmem_max); the kernel doubles it for its overhead.
  int receive_buffer_bytes = 4 << 20;
  // A token bucket on the sender: at most this many bytes of datagrams per second (0: as fast as sendto goes).
  double send_rate_Bps = 0;
  std::optional<LossModel> loss;  // injected at the sender, counted, never sent
};

class UdpEndpoint final : public DatagramEndpoint {
 public:
  // Binds a socket to 127.0.0.1 on a port the kernel picks. Throws IoError naming the call that failed.
  UdpEndpoint(int rank, const UdpOptions& options);
  ~UdpEndpoint() override;
  UdpEndpoint(const UdpEndpoint&) = delete;
  UdpEndpoint& operator=(const UdpEndpoint&) = delete;

  std::uint16_t port() const { return port_; }
  // The receive buffer the kernel granted (getsockopt SO_RCVBUF).
  int receive_buffer_bytes() const { return receive_buffer_bytes_; }
  // Every endpoint's port, by rank (exchanged by the caller: in-process, or over a Comm).
  void set_peers(std::vector<std::uint16_t> ports) { peers_ = std::move(ports); }

  // Datagrams the kernel dropped at this socket (its full receive buffer) since it was bound.
  std::uint64_t kernel_drops() const;
  std::uint64_t receiver_drops() const override { return kernel_drops(); }

 protected:
  bool transmit(int destination, std::vector<std::byte> datagram) override;
  std::optional<std::vector<std::byte>> next_datagram(double timeout_s) override;

 private:
  void pace(std::size_t bytes);

  UdpOptions options_;
  int socket_ = -1;
  std::uint16_t port_ = 0;
  int receive_buffer_bytes_ = 0;
  std::vector<std::uint16_t> peers_;
  std::vector<std::byte> scratch_;
  double bucket_start_s_ = -1;  // the token bucket's clock: when the first paced byte went
  double paced_bytes_ = 0;
};

// The "drops" count of the UDP socket bound to 127.0.0.1:`port`, from /proc/net/udp; nullopt if none is listed.
std::optional<std::uint64_t> proc_net_udp_drops(std::uint16_t port);

}  // namespace dsgd::measure::udp
