#include "core/comm.hpp"

#include <cstdio>

namespace dsgd {

void Comm::check_peer(int peer, bool any_allowed, std::string_view operation) const {
  if (any_allowed && peer == kAnySource) return;
  if (peer < 0 || peer >= size()) {
    throw CommError("rank " + std::to_string(rank()) + ": " + std::string(operation) + " rank " + std::to_string(peer) +
                    " is out of range [0, " + std::to_string(size()) + ")");
  }
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

std::string peer_text(int rank) { return rank == kAnySource ? "any rank" : "rank " + std::to_string(rank); }

std::string size_mismatch_text(int receiver, int source, Tag tag, std::size_t expected, std::size_t actual) {
  return "rank " + std::to_string(receiver) + " expected " + std::to_string(expected) + " bytes from " +
         peer_text(source) + " (tag " + std::to_string(tag) + ") but the message has " + std::to_string(actual) +
         " bytes";
}

std::string waited_text(int rank, double timeout_s, const std::string& what) {
  return "rank " + std::to_string(rank) + " waited " + seconds_text(timeout_s) + " s " + what;
}

std::string awaited_message_text(int source, Tag tag, std::size_t bytes) {
  return "for a message from " + peer_text(source) + " (tag " + std::to_string(tag) + ", " + std::to_string(bytes) +
         " bytes)";
}

}  // namespace dsgd
