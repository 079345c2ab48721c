#include "core/comm.hpp"

#include <numeric>

namespace dsgd {

double Breakdown::total() const { return std::accumulate(seconds.begin(), seconds.end(), 0.0); }

void Comm::check_peer(int peer, bool any_allowed, std::string_view operation) const {
  if (any_allowed && peer == kAnySource) return;
  if (peer < 0 || peer >= size()) {
    throw CommError("rank " + std::to_string(rank()) + ": " + std::string(operation) + " rank " +
                    std::to_string(peer) + " is out of range [0, " + std::to_string(size()) + ")");
  }
}

}  // namespace dsgd
