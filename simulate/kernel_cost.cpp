#include "simulate/kernel_cost.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::simulate {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

void check_machine(const KernelMachine& machine) {
  if (!(machine.peak_flops > 0) || machine.parallel_units < 1 || machine.tile_m < 1 || machine.tile_n < 1 ||
      !(machine.efficiency > 0) || machine.tile_k_overhead < 0 || machine.kernel_fixed_s < 0 ||
      machine.sync_s_per_unit < 0) {
    throw InputError("kernel cost: a machine needs a positive peak (" + significant(machine.peak_flops) + "), units (" +
                     std::to_string(machine.parallel_units) + "), tile (" + std::to_string(machine.tile_m) + " x " +
                     std::to_string(machine.tile_n) + ") and efficiency (" + significant(machine.efficiency) +
                     "), and no negative overhead");
  }
  for (const MemoryTier& tier : machine.tiers) {
    if (!(tier.capacity_bytes > 0) || !(tier.bandwidth_Bps > 0)) {
      throw InputError("kernel cost: memory tier '" + tier.name + "' needs a positive capacity and bandwidth");
    }
  }
}

// The fastest tier that holds the kernel's data: its own bytes for a cache, the rank's resident set otherwise.
std::optional<std::size_t> serving_tier(const KernelMachine& machine, double kernel_bytes, double resident_bytes) {
  if (machine.tiers.empty()) return std::nullopt;
  for (std::size_t i = 0; i < machine.tiers.size(); ++i) {
    const MemoryTier& tier = machine.tiers[i];
    const double held =
        tier.scope == MemoryTier::Scope::kKernel ? kernel_bytes : std::max(kernel_bytes, resident_bytes);
    if (held <= tier.capacity_bytes) return i;
  }
  return machine.tiers.size() - 1;
}

// A GEMM cut into tiles: how many, and what they leave of the units' peak.
struct Tiling {
  double tiles = 1;
  double efficiency = 1;
};

Tiling tiling_of(const KernelMachine& machine, const GemmShape& gemm) {
  if (gemm.m < 1 || gemm.n < 1 || gemm.k < 1 || gemm.count < 1) return {};  // no work: nothing to lose
  const std::int64_t tiles_m = ceil_div(gemm.m, machine.tile_m);
  const std::int64_t tiles_n = ceil_div(gemm.n, machine.tile_n);
  Tiling tiling;
  tiling.tiles = static_cast<double>(tiles_m) * static_cast<double>(tiles_n) * static_cast<double>(gemm.count);
  const double units = machine.parallel_units;
  const double busy_units = tiling.tiles / (std::ceil(tiling.tiles / units) * units);  // the last wave's idle units
  const double useful_area = static_cast<double>(gemm.m) / static_cast<double>(tiles_m * machine.tile_m) *
                             static_cast<double>(gemm.n) / static_cast<double>(tiles_n * machine.tile_n);
  const double k = static_cast<double>(gemm.k);
  tiling.efficiency = busy_units * useful_area * k / (k + machine.tile_k_overhead);
  return tiling;
}

}  // namespace

double gemm_shape_efficiency(const KernelMachine& machine, const GemmShape& gemm) {
  check_machine(machine);
  return tiling_of(machine, gemm).efficiency;
}

KernelCost kernel_cost(const KernelMachine& machine, const LayerKernel& kernel, double resident_bytes) {
  check_machine(machine);
  KernelCost cost;
  double units_taking_part = machine.parallel_units;
  if (kernel.gemm) {
    const Tiling tiling = tiling_of(machine, *kernel.gemm);
    cost.shape_efficiency = tiling.efficiency;
    units_taking_part = std::min(units_taking_part, tiling.tiles);
  }
  cost.compute_s = kernel.flops / (machine.peak_flops * machine.efficiency * cost.shape_efficiency);
  cost.tier = serving_tier(machine, kernel.bytes, resident_bytes);
  if (cost.tier) cost.memory_s = kernel.bytes / machine.tiers[*cost.tier].bandwidth_Bps;
  cost.fixed_s = machine.kernel_fixed_s + machine.sync_s_per_unit * units_taking_part;
  cost.seconds = std::max(cost.compute_s, cost.memory_s) + cost.fixed_s;
  return cost;
}

}  // namespace dsgd::simulate
