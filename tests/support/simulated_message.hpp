#pragma once
// SimGrid's simulated seconds for one lone message (message fidelity, size only): what the platform builder's and
// the analytic route model's tests hold their routes to.

#include <cstddef>

#include "core/comm.hpp"
#include "platforms/platform.hpp"
#include "simulate/simgrid/executor.hpp"

namespace dsgd::testing {

// One message of `bytes` from rank `from` to rank `to` in a world of `ranks` ranks placed by `placement`.
inline double simulated_message_s(const platforms::Platform& platform, int ranks, int from, int to, std::size_t bytes,
                                  const simulate::PlacementOptions& placement = {}) {
  WorldOptions world;
  world.size = ranks;
  world.payload = false;
  simulate::SimulationOptions options;
  options.placement = placement;
  options.fidelity = simulate::Fidelity::kMessage;
  return simulate::simgrid::run(
             platform, world,
             [&](Comm& comm) {
               if (comm.rank() == from) comm.send(to, 0, nullptr, bytes, Category::kNetwork);
               if (comm.rank() == to) comm.recv(from, 0, nullptr, bytes, Category::kNetwork);
             },
             options)
      .time_s;
}

}  // namespace dsgd::testing
