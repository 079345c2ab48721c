// Async MSGD: Async SGD with momentum on the server (seed 000 eqs. 3-4).
// The mechanics are parameter_server.hpp's GradientServer; this file chooses the momentum.

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

AlgorithmEntry async_msgd_entry() {
  return {{"async-msgd", "async-sgd with momentum on the server (seed 000 eqs. 3-4)", /*has_master=*/true,
           /*synchronous=*/false, /*shardable=*/true},
          [](Trainer& trainer) { return std::make_unique<GradientServer>(trainer, trainer.hyper().momentum); }};
}

}  // namespace dsgd::algorithms
