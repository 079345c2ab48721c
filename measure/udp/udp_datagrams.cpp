#include "measure/udp/udp_datagrams.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace dsgd::measure::udp {

namespace {

[[noreturn]] void fail(const std::string& what) { throw IoError("udp: " + what + ": " + std::strerror(errno)); }

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

}  // namespace

UdpEndpoint::UdpEndpoint(int rank, const UdpOptions& options)
    : DatagramEndpoint(rank, options.loss), options_(options), scratch_(kMaxDatagramBytes + 1) {
  socket_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (socket_ < 0) fail("socket");
  // Past net.core.rmem_max where allowed (root); otherwise what rmem_max grants.
  const int asked = options.receive_buffer_bytes;
  if (::setsockopt(socket_, SOL_SOCKET, SO_RCVBUFFORCE, &asked, sizeof asked) != 0 &&
      ::setsockopt(socket_, SOL_SOCKET, SO_RCVBUF, &asked, sizeof asked) != 0) {
    ::close(socket_);
    fail("setsockopt SO_RCVBUF " + std::to_string(asked));
  }
  socklen_t length = sizeof receive_buffer_bytes_;
  ::getsockopt(socket_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes_, &length);
  sockaddr_in address = loopback(0);
  if (::bind(socket_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(socket_);
    fail("bind 127.0.0.1");
  }
  length = sizeof address;
  ::getsockname(socket_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
}

UdpEndpoint::~UdpEndpoint() {
  if (socket_ >= 0) ::close(socket_);
}

void UdpEndpoint::pace(std::size_t bytes) {
  if (options_.send_rate_Bps <= 0) return;
  const double now = now_s();
  if (bucket_start_s_ < 0) bucket_start_s_ = now;
  paced_bytes_ += static_cast<double>(bytes);
  const double due_s = bucket_start_s_ + paced_bytes_ / options_.send_rate_Bps;
  if (due_s > now) std::this_thread::sleep_for(std::chrono::duration<double>(due_s - now));
}

bool UdpEndpoint::transmit(int destination, std::vector<std::byte> datagram) {
  if (destination >= static_cast<int>(peers_.size())) {
    throw InputError("udp: no peer " + std::to_string(destination) + " (" + std::to_string(peers_.size()) + " known)");
  }
  pace(datagram.size());
  const std::uint16_t port = peers_[static_cast<std::size_t>(destination)];
  const sockaddr_in address = loopback(port);
  const ssize_t sent = ::sendto(socket_, datagram.data(), datagram.size(), MSG_DONTWAIT,
                                reinterpret_cast<const sockaddr*>(&address), sizeof address);
  if (sent >= 0) return true;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return false;
  fail("sendto 127.0.0.1:" + std::to_string(port));
}

std::optional<std::vector<std::byte>> UdpEndpoint::next_datagram(double timeout_s) {
  const double deadline = now_s() + timeout_s;
  while (true) {
    // What has arrived is taken first: a timeout of 0 takes it without waiting.
    const ssize_t bytes = ::recv(socket_, scratch_.data(), scratch_.size(), MSG_DONTWAIT);
    if (bytes >= 0) return std::vector<std::byte>(scratch_.begin(), scratch_.begin() + bytes);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) fail("recv on 127.0.0.1:" + std::to_string(port_));
    const double left_s = deadline - now_s();
    if (left_s <= 0) return std::nullopt;
    pollfd ready{socket_, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(left_s * 1000) + 1) < 0 && errno != EINTR) fail("poll");
  }
}

std::uint64_t UdpEndpoint::kernel_drops() const { return proc_net_udp_drops(port_).value_or(0); }

std::optional<std::uint64_t> proc_net_udp_drops(std::uint16_t port) {
  std::ifstream table("/proc/net/udp");
  std::string line;
  std::getline(table, line);  // the header
  char local[32];
  std::snprintf(local, sizeof local, "0100007F:%04X", static_cast<unsigned>(port));
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, address;
    fields >> slot >> address;
    if (address != local) continue;
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
    std::string field;
    std::vector<std::string> rest;
    while (fields >> field) rest.push_back(field);
    if (rest.empty()) return std::nullopt;
    return std::stoull(rest.back());
  }
  return std::nullopt;
}

}  // namespace dsgd::measure::udp
