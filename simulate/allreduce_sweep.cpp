#include "simulate/allreduce_sweep.hpp"

#include <optional>
#include <string>

#include "core/error.hpp"
#include "reports/allreduce_entry.hpp"
#include "simulate/collective_costs.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "simulate/study_entries.hpp"

namespace dsgd::simulate {

std::vector<reports::Entry> simulate_allreduce_sweep(const platforms::Platform& platform,
                                                     const SimulatedSweepOptions& options, std::ostream* log) {
  WorldOptions world;
  world.size = options.ranks;
  world.payload = false;
  world.timeout_s = options.timeout_s;
  SimulationOptions simulation;
  simulation.fidelity = options.fidelity;
  simulation.placement.ranks_per_node = options.ranks_per_node;
  auto model = alpha_beta_gamma(platform);
  const auto site = place_ranks(platform, options.ranks, simulation.placement).front();
  model.flops = site.peak_flops * site.efficiency.of("elementwise");
  const auto closed_form = [&](AllreduceAlgorithm algorithm, std::size_t floats) -> std::optional<double> {
    if (simulation.placement.ranks_per_node == 1) return allreduce_time(model, algorithm, options.ranks, floats);
    try {
      const auto levels =
          two_level_model(platform, options.ranks, simulation.placement, static_cast<double>(floats) * sizeof(float));
      return two_level_allreduce_time(levels, algorithm, floats);
    } catch (const InputError&) {
      return std::nullopt;  // no closed form for this algorithm or placement
    }
  };
  std::vector<reports::Entry> entries;
  for (const std::size_t floats : options.sizes) {
    for (const auto algorithm : options.algorithms) {
      const auto simulated = simgrid::run(
          platform, world,
          [&](Comm& comm) {
            allreduce(comm, {nullptr, floats}, algorithm);
          },
          simulation);
      auto entry = reports::allreduce_entry("simgrid", std::string(to_string(simulated.fidelity)),
                                            std::string(to_string(algorithm)), options.ranks, floats,
                                            {simulated.time_s, simulated.time_s, simulated.time_s, 1});
      add_simulation(entry, simulated, platform.name);
      if (const auto expected = closed_form(algorithm, floats)) entry.counters["closed_form_s"] = *expected;
      entries.push_back(std::move(entry));
    }
    if (log != nullptr) *log << "bench: simgrid, " << floats << " floats done" << std::endl;
  }
  return entries;
}

}  // namespace dsgd::simulate
