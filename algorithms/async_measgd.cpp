// Async MEASGD: Async EASGD with momentum on the workers (eqs. 5-6).
// The mechanics are parameter_server.hpp's ElasticServer; this file chooses the momentum.

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

AlgorithmEntry async_measgd_entry() {
  return {{"async-measgd", "async-easgd with momentum on the workers (eqs. 5-6)", /*has_master=*/true,
           /*synchronous=*/false, /*shardable=*/true},
          [](Trainer& trainer) { return std::make_unique<ElasticServer>(trainer, trainer.hyper().momentum); }};
}

}  // namespace dsgd::algorithms
