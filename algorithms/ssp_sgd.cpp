// SSP SGD: stale synchronous parallel (Ho et al. 2013, seed 004) as a parameter server. Workers push gradients
// every period as in async-sgd and the server applies them as they come, but a worker that has pushed c times
// gets its reply -- and so starts its next iteration -- only once every worker has pushed at least c - s times
// (--staleness-bound s). s = 0 is BSP (then the server takes each clock's pushes in worker order, so the run is
// deterministic); an s above the run's pushes is async-sgd. The mechanics are parameter_server.hpp's
// GradientServer; the realised staleness in clocks is Trainer::clock_staleness().

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

AlgorithmEntry ssp_sgd_entry() {
  return {{"ssp-sgd",
           "async-sgd with a staleness bound: a worker waits while it is more than --staleness-bound pushes ahead "
           "of the slowest (SSP; 0 is BSP)",
           /*has_master=*/true, /*synchronous=*/false, /*shardable=*/true},
          [](Trainer& trainer) {
            return std::make_unique<GradientServer>(trainer, 0.0F, trainer.hyper().staleness_bound);
          }};
}

}  // namespace dsgd::algorithms
