#include "measure/threads_pingpong.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "core/error.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/threads/executor.hpp"
#include "measure/waiting_share.hpp"

namespace dsgd::measure {

namespace {

// Round trips per sample: about a millisecond's worth for small messages, one for large ones (as dsgd-mpi's
// ping-pong). A function of the size only, so both ranks agree without talking.
int trips_per_sample(std::size_t bytes) {
  return static_cast<int>(
      std::clamp<std::size_t>((std::size_t{1} << 22) / std::max<std::size_t>(bytes, 4096), 1, 1000));
}

}  // namespace

std::vector<PingPongPoint> threads_pingpong(const ThreadsPingPongOptions& options) {
  if (options.rounds < 1) throw InputError("threads ping-pong: rounds must be at least 1");
  if (!(options.min_bytes >= 1) || options.max_bytes < options.min_bytes) {
    throw InputError("threads ping-pong: need 1 <= min bytes <= max bytes");
  }
  std::vector<std::size_t> sizes;
  for (double bytes = 1; bytes <= options.max_bytes; bytes *= 2) {
    if (bytes >= options.min_bytes) sizes.push_back(static_cast<std::size_t>(bytes));
  }
  if (sizes.empty()) throw InputError("threads ping-pong: no power of two between min bytes and max bytes");
  if (options.busy_ranks < 0) throw InputError("threads ping-pong: busy ranks must be >= 0");
  std::vector<std::vector<double>> samples(sizes.size());
  constexpr Tag kTag = 1;
  WorldOptions world;
  world.size = 2 + options.busy_ranks;
  world.timeout_s = 600;
  std::atomic<bool> over{false};
  threads::run_threads(world, [&](Comm& comm) {
    if (comm.rank() >= 2) {
      while (!over.load(std::memory_order_relaxed)) compute_for(1e-3);
      return;
    }
    // The computing ranks stop however the pair ends (an exception included).
    struct Over {
      std::atomic<bool>& over;
      ~Over() { over = true; }
    } stop{over};
    PingPongBuffers buffers(sizes.back(), options.pool_bytes);
    const int peer = 1 - comm.rank();
    // Round 0 warms up (page faults) and is not kept; rounds sweep all sizes so drift affects every size alike.
    for (int round = 0; round <= options.rounds; ++round) {
      for (std::size_t s = 0; s < sizes.size(); ++s) {
        const int trips = trips_per_sample(sizes[s]);
        const double start = comm.now_s();
        for (int trip = 0; trip < trips; ++trip) {
          if (comm.rank() == 0) {
            comm.send(peer, kTag, buffers.next(sizes[s]), sizes[s], Category::kNetwork);
            comm.recv(peer, kTag, buffers.next(sizes[s]), sizes[s], Category::kNetwork);
          } else {
            comm.recv(peer, kTag, buffers.next(sizes[s]), sizes[s], Category::kNetwork);
            comm.send(peer, kTag, buffers.next(sizes[s]), sizes[s], Category::kNetwork);
          }
        }
        if (comm.rank() == 0 && round > 0) samples[s].push_back((comm.now_s() - start) / trips);
      }
    }
  });
  std::vector<PingPongPoint> points;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    points.push_back({static_cast<double>(sizes[s]), options.mean ? mean(samples[s]) : median(samples[s])});
  }
  return points;
}

}  // namespace dsgd::measure
