#include "measure/udp/udp_datagrams.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "core/error.hpp"

namespace dsgd::measure::udp {

namespace {

[[noreturn]] void fail(const std::string& what) { throw IoError("udp: " + what + ": " + std::strerror(errno)); }

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

sockaddr_in loopback(std::uint16_t port) { return socket_address(INADDR_LOOPBACK, port); }

std::string dotted(std::uint32_t address) {
  return std::to_string(address >> 24) + "." + std::to_string(address >> 16 & 255) + "." +
         std::to_string(address >> 8 & 255) + "." + std::to_string(address & 255);
}

// A socket closed when it goes out of scope unless released.
struct Socket {
  int fd = -1;
  explicit Socket(int descriptor) : fd(descriptor) {}
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int release() { return std::exchange(fd, -1); }
};

// Asks for `bytes` of receive buffer (as root past net.core.rmem_max); false if neither call was allowed.
bool ask_receive_buffer(int socket, int bytes) {
  return ::setsockopt(socket, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) == 0 ||
         ::setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes) == 0;
}

// Makes `socket`'s multicast leave on 127.0.0.1, come back to this machine's members, and go no further (TTL 0).
// Empty on success, else the call that failed and why.
std::string send_multicast_on_loopback(int socket) {
  const in_addr interface { htonl(INADDR_LOOPBACK) };
  const int loop = 1;
  const int ttl = 0;
  if (::setsockopt(socket, IPPROTO_IP, IP_MULTICAST_IF, &interface, sizeof interface) != 0) {
    return std::string("setsockopt IP_MULTICAST_IF 127.0.0.1: ") + std::strerror(errno);
  }
  if (::setsockopt(socket, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0) {
    return std::string("setsockopt IP_MULTICAST_LOOP: ") + std::strerror(errno);
  }
  if (::setsockopt(socket, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0) {
    return std::string("setsockopt IP_MULTICAST_TTL: ") + std::strerror(errno);
  }
  return {};
}

// A socket bound to the group of the sender at `port` (address and port), a member of it on 127.0.0.1; -1 and
// `error` set when a call fails.
int join_group(std::uint16_t port, int receive_buffer_bytes, std::string& error) {
  const std::uint32_t group = group_address(port);
  const std::string where = dotted(group) + ":" + std::to_string(port);
  Socket joined(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const int reuse = 1;  // every member of the group binds its address
  const sockaddr_in address = socket_address(group, port);
  const ip_mreq membership{{htonl(group)}, {htonl(INADDR_LOOPBACK)}};
  if (joined.fd < 0) {
    error = "socket";
  } else if (::setsockopt(joined.fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse) != 0) {
    error = "setsockopt SO_REUSEADDR";
  } else if (!ask_receive_buffer(joined.fd, receive_buffer_bytes)) {
    error = "setsockopt SO_RCVBUF " + std::to_string(receive_buffer_bytes);
  } else if (::bind(joined.fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    error = "bind " + where;
  } else if (::setsockopt(joined.fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &membership, sizeof membership) != 0) {
    error = "join " + where + " on 127.0.0.1";
  } else {
    return joined.release();
  }
  error += std::string(": ") + std::strerror(errno);
  return -1;
}

}  // namespace

std::uint32_t group_address(std::uint16_t port) { return 0xEFFF0000U | port; }

sockaddr_in socket_address(std::uint32_t address, std::uint16_t port) {
  sockaddr_in out{};
  out.sin_family = AF_INET;
  out.sin_port = htons(port);
  out.sin_addr.s_addr = htonl(address);
  return out;
}

const std::optional<std::string>& multicast_on_loopback() {
  static const std::optional<std::string> verdict = []() -> std::optional<std::string> {
    Socket sender(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in address = loopback(0);
    socklen_t length = sizeof address;
    if (sender.fd < 0 || ::bind(sender.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(sender.fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return std::string("a probe socket on 127.0.0.1: ") + std::strerror(errno);
    }
    const std::uint16_t port = ntohs(address.sin_port);
    if (std::string error = send_multicast_on_loopback(sender.fd); !error.empty()) return error;
    std::string error;
    const Socket member(join_group(port, 1 << 16, error));
    if (member.fd < 0) return error;
    const char probe[] = "dsgd multicast probe";
    const sockaddr_in group = socket_address(group_address(port), port);
    if (::sendto(sender.fd, probe, sizeof probe, 0, reinterpret_cast<const sockaddr*>(&group), sizeof group) < 0) {
      return "sendto " + dotted(group_address(port)) + ": " + std::strerror(errno);
    }
    pollfd ready{member.fd, POLLIN, 0};
    char arrived[sizeof probe] = {};
    if (::poll(&ready, 1, 200) <= 0 || ::recv(member.fd, arrived, sizeof arrived, MSG_DONTWAIT) != sizeof probe ||
        std::memcmp(arrived, probe, sizeof probe) != 0) {
      return "a multicast datagram sent on 127.0.0.1 did not arrive at its member within 0.2 s";
    }
    return std::nullopt;
  }();
  return verdict;
}

UdpEndpoint::UdpEndpoint(int rank, const DatagramKey& key, const UdpOptions& options)
    : DatagramEndpoint(rank, key, options.loss), options_(options), scratch_(kMaxDatagramBytes + 1) {
  socket_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (socket_ < 0) fail("socket");
  // Past net.core.rmem_max where allowed (root); otherwise what rmem_max grants.
  if (!ask_receive_buffer(socket_, options.receive_buffer_bytes)) {
    ::close(socket_);
    fail("setsockopt SO_RCVBUF " + std::to_string(options.receive_buffer_bytes));
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
  for (const int joined : group_sockets_) ::close(joined);
}

void UdpEndpoint::set_peers(std::vector<std::uint16_t> ports) {
  peers_ = std::move(ports);
  if (!options_.multicast || ip_multicast_) return;
  // Every endpoint of a world runs on one machine and sees the same verdict, so either all send and join or none.
  if (multicast_on_loopback()) return;
  if (std::string error = send_multicast_on_loopback(socket_); !error.empty()) throw IoError("udp: " + error);
  for (std::size_t r = 0; r < peers_.size(); ++r) {
    if (static_cast<int>(r) == rank()) continue;
    std::string error;
    const int joined = join_group(peers_[r], options_.receive_buffer_bytes, error);
    if (joined < 0) throw IoError("udp: rank " + std::to_string(rank()) + ": " + error);
    group_sockets_.push_back(joined);
    group_owners_.push_back(static_cast<int>(r));
  }
  ip_multicast_ = true;
}

std::string UdpEndpoint::group_delivery() const {
  if (ip_multicast_) return "ip multicast on 127.0.0.1";
  const auto& why = multicast_on_loopback();
  return std::string("emulated, one sendto per member (") +
         (!options_.multicast ? "multicast was not asked for"
          : why               ? *why
                              : "no peers yet") +
         ")";
}

void UdpEndpoint::pace(std::size_t bytes) {
  if (options_.send_rate_Bps <= 0) return;
  const double now = now_s();
  if (bucket_start_s_ < 0) bucket_start_s_ = now;
  paced_bytes_ += static_cast<double>(bytes);
  const double due_s = bucket_start_s_ + paced_bytes_ / options_.send_rate_Bps;
  if (due_s > now) std::this_thread::sleep_for(std::chrono::duration<double>(due_s - now));
}

bool UdpEndpoint::send_to(std::uint32_t address, std::uint16_t port, const std::vector<std::byte>& datagram) {
  pace(datagram.size());
  const sockaddr_in to = socket_address(address, port);
  const ssize_t sent = ::sendto(socket_, datagram.data(), datagram.size(), MSG_DONTWAIT,
                                reinterpret_cast<const sockaddr*>(&to), sizeof to);
  if (sent >= 0) return true;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return false;
  fail("sendto " + dotted(address) + ":" + std::to_string(port));
}

bool UdpEndpoint::transmit(int destination, std::vector<std::byte> datagram) {
  if (destination >= static_cast<int>(peers_.size())) {
    throw InputError("udp: no peer " + std::to_string(destination) + " (" + std::to_string(peers_.size()) + " known)");
  }
  return send_to(INADDR_LOOPBACK, peers_[static_cast<std::size_t>(destination)], datagram);
}

bool UdpEndpoint::transmit_to_group(std::vector<std::byte> datagram) {
  if (ip_multicast_) return send_to(group_address(port_), port_, datagram);
  // Emulated: refused only if the first member's send was (nothing left); a later refusal is that member's loss.
  bool first = true;
  for (std::size_t r = 0; r < peers_.size(); ++r) {
    if (static_cast<int>(r) == rank()) continue;
    if (!send_to(INADDR_LOOPBACK, peers_[r], datagram) && first) return false;
    first = false;
  }
  return true;
}

int UdpEndpoint::peer_at(const sockaddr_in& address) const {
  if (address.sin_family != AF_INET || ntohl(address.sin_addr.s_addr) != INADDR_LOOPBACK) return kUnknownSender;
  for (std::size_t r = 0; r < peers_.size(); ++r) {
    if (peers_[r] == ntohs(address.sin_port)) return static_cast<int>(r);
  }
  return kUnknownSender;
}

std::optional<Arrival> UdpEndpoint::next_datagram(double timeout_s) {
  const double deadline = now_s() + timeout_s;
  const std::size_t sockets = 1 + group_sockets_.size();
  const auto socket_at = [&](std::size_t i) { return i == 0 ? socket_ : group_sockets_[i - 1]; };
  while (true) {
    // What has arrived is taken first (a timeout of 0 takes it without waiting), each socket in turn.
    for (std::size_t k = 0; k < sockets; ++k) {
      const std::size_t i = (next_socket_ + k) % sockets;
      sockaddr_in from{};
      socklen_t from_bytes = sizeof from;
      const ssize_t bytes = ::recvfrom(socket_at(i), scratch_.data(), scratch_.size(), MSG_DONTWAIT,
                                       reinterpret_cast<sockaddr*>(&from), &from_bytes);
      if (bytes >= 0) {
        next_socket_ = (i + 1) % sockets;
        int sender = from_bytes == sizeof from ? peer_at(from) : kUnknownSender;
        if (i > 0 && sender != group_owners_[i - 1]) sender = kUnknownSender;  // a group hears its owner only
        return Arrival{std::vector<std::byte>(scratch_.begin(), scratch_.begin() + bytes), sender};
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) fail("recv on 127.0.0.1:" + std::to_string(port_));
    }
    const double left_s = deadline - now_s();
    if (left_s <= 0) return std::nullopt;
    std::vector<pollfd> ready;
    for (std::size_t i = 0; i < sockets; ++i) ready.push_back({socket_at(i), POLLIN, 0});
    if (::poll(ready.data(), ready.size(), static_cast<int>(left_s * 1000) + 1) < 0 && errno != EINTR) fail("poll");
  }
}

std::uint64_t UdpEndpoint::kernel_drops() const {
  std::uint64_t drops = socket_drops(socket_).value_or(0);
  for (const int joined : group_sockets_) drops += socket_drops(joined).value_or(0);
  return drops;
}

std::optional<std::uint64_t> socket_drops(int socket) {
  struct stat status {};
  if (::fstat(socket, &status) != 0) return std::nullopt;
  const std::string inode = std::to_string(status.st_ino);
  std::ifstream table("/proc/net/udp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
    std::istringstream fields(line);
    std::vector<std::string> field;
    for (std::string f; fields >> f;) field.push_back(f);
    if (field.size() >= 13 && field[9] == inode) return std::stoull(field[12]);
  }
  return std::nullopt;
}

}  // namespace dsgd::measure::udp
