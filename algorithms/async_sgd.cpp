// Async SGD: a parameter server applies each worker's gradient as it arrives (first come, first served).
// The mechanics are parameter_server.hpp's GradientServer; this file chooses the momentum.

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

AlgorithmEntry async_sgd_entry() {
  return {{"async-sgd", "a parameter server applies each worker's gradient as it arrives, first come first served",
           /*has_master=*/true, /*synchronous=*/false, /*shardable=*/true},
          [](Trainer& trainer) { return std::make_unique<GradientServer>(trainer, 0.0F); }};
}

}  // namespace dsgd::algorithms
