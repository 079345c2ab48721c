// Async EASGD: workers pull toward a centre the master keeps, first come first served (eqs. 1-2).
// The mechanics are parameter_server.hpp's ElasticServer; this file chooses the momentum.

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

AlgorithmEntry async_easgd_entry() {
  return {
      {"async-easgd", "workers and a centre on the master pull toward each other, first come first served (eqs. 1-2)",
       /*has_master=*/true, /*synchronous=*/false, /*shardable=*/true},
      [](Trainer& trainer) { return std::make_unique<ElasticServer>(trainer, 0.0F); }};
}

}  // namespace dsgd::algorithms
