#include "measure/threads_pingpong.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/threads/executor.hpp"
#include "measure/waiting_share.hpp"

namespace dsgd::measure {

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
  WorldOptions world;
  world.size = 2 + options.busy_ranks;
  world.timeout_s = 600;
  std::atomic<bool> over{false};
  threads::run(world, [&](Comm& comm) {
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
    // Round 0 warms up (page faults) and is not kept; rounds sweep all sizes so drift affects every size alike.
    for (int round = 0; round <= options.rounds; ++round) {
      for (std::size_t s = 0; s < sizes.size(); ++s) {
        const int trips = trips_per_sample(sizes[s]);
        const double start = comm.now_s();
        pingpong_trips(comm, buffers, sizes[s], trips);
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
