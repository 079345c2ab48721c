#pragma once
// One check of Comm::datagrams that every executor with an unreliable channel runs (threads, MPI under mpirun): each
// rank sends `count` datagrams to every other rank with 10% loss injected at the senders, then receives until the
// channel is quiet; from each source it must get exactly the sequences the loss model kept, each carrying the
// source's floats. Throws std::runtime_error naming rank, source and the difference.

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/datagram.hpp"

namespace dsgd::testing {

inline void check_datagrams_lose_exactly_the_injected(Comm& comm, int count) {
  DatagramOptions options;
  options.loss_rate = 0.1;
  options.loss_seed = 5;
  options.send_rate_Bps = 20e6;  // paced, so that the kernel drops nothing and only the injected loss shows
  const auto endpoint = comm.datagrams(options);
  const LossModel loss(options.loss_rate, options.loss_seed);
  const int rank = comm.rank();
  const std::vector<float> floats(64, static_cast<float>(rank));
  for (int s = 0; s < count; ++s) {
    for (int destination = 0; destination < comm.size(); ++destination) {
      if (destination != rank) endpoint->send(destination, 1, 0, 0, floats.data(), floats.size());
    }
  }
  std::map<std::uint32_t, std::set<std::uint64_t>> received;
  while (const auto chunk = endpoint->receive(64, 1.0)) {
    if (chunk->floats != std::vector<float>(64, static_cast<float>(chunk->header.source))) {
      throw std::runtime_error("rank " + std::to_string(rank) + ": a datagram from rank " +
                               std::to_string(chunk->header.source) + " carried other floats");
    }
    received[chunk->header.source].insert(chunk->header.sequence);
  }
  for (int source = 0; source < comm.size(); ++source) {
    if (source == rank) continue;
    std::set<std::uint64_t> kept;
    for (int s = 0; s < count; ++s) {
      if (!loss.drops(static_cast<std::uint32_t>(source), static_cast<std::uint32_t>(rank),
                      static_cast<std::uint64_t>(s))) {
        kept.insert(static_cast<std::uint64_t>(s));
      }
    }
    const auto& got = received[static_cast<std::uint32_t>(source)];
    if (got != kept) {
      throw std::runtime_error("rank " + std::to_string(rank) + ": from rank " + std::to_string(source) + " received " +
                               std::to_string(got.size()) + " datagrams, the loss model kept " +
                               std::to_string(kept.size()));
    }
  }
  if (endpoint->injected_drops() == 0 || endpoint->ledger().refused_total() != 0) {
    throw std::runtime_error("rank " + std::to_string(rank) + ": no injected drop, or refused datagrams");
  }
}

}  // namespace dsgd::testing
