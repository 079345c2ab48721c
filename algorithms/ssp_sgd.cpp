// SSP SGD: stale synchronous parallel (Ho et al. 2013, seed 004) as a parameter server. Workers push gradients
// every period as in async-sgd and the server applies them as they come, but a worker that has pushed c times
// gets its reply -- and so starts its next iteration -- only once every worker has pushed at least c - s times
// (--staleness-bound s). s = 0 is BSP (then the server takes each clock's pushes in worker order, so the run is
// deterministic); an s above the run's pushes is async-sgd. The mechanics are parameter_server.hpp's
// GradientServer, with momentum on the server where --server-momentum sets it; the realised staleness in clocks is
// Trainer::clock_staleness().

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

AlgorithmEntry ssp_sgd_entry() {
  AlgorithmEntry entry{
      {"ssp-sgd",
       "async-sgd with a staleness bound: a worker waits while it is more than --staleness-bound pushes ahead of the "
       "slowest (SSP; 0 is BSP)",
       /*has_master=*/true, /*synchronous=*/false, /*shardable=*/true},
      [](Trainer& trainer) {
        const auto momentum = static_cast<float>(trainer.option("server-momentum"));
        return std::make_unique<GradientServer>(trainer, momentum, trainer.hyper().staleness_bound);
      }};
  // Momentum where the pushes are applied, as async-msgd's: staleness acts as implicit momentum (Mitliagkas et al.
  // 2016), so a bounded-staleness run may want less of it than a synchronous one.
  entry.info.options = {{"server-momentum",
                         "momentum mu the server applies to the pushed gradients, as async-msgd's (seed 000 eqs. "
                         "3-4); 0: plain SSP",
                         0, 0, 0.999}};
  return entry;
}

}  // namespace dsgd::algorithms
