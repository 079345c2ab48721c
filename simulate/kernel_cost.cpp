#include "simulate/kernel_cost.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::simulate {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

constexpr double kFloatBytes = 4;  // the kernels' tensors are fp32

void check_machine(const KernelMachine& machine) {
  const bool tiles_positive = std::all_of(machine.tiles.begin(), machine.tiles.end(),
                                          [](const auto& tile) { return tile[0] >= 1 && tile[1] >= 1; });
  if (!(machine.peak_flops > 0) || machine.parallel_units < 1 || machine.tile_m < 1 || machine.tile_n < 1 ||
      !tiles_positive || !(machine.efficiency > 0) || machine.tile_k_overhead < 0 || machine.kernel_fixed_s < 0 ||
      machine.sync_s_per_unit < 0) {
    throw InputError("kernel cost: a machine needs a positive peak (" + significant(machine.peak_flops) + "), units (" +
                     std::to_string(machine.parallel_units) + "), tile (" + std::to_string(machine.tile_m) + " x " +
                     std::to_string(machine.tile_n) + ") and efficiency (" + significant(machine.efficiency) +
                     "), and no negative overhead");
  }
  for (const auto& [kind, rate] : machine.streaming) {
    if (!(rate.forward_Bps > 0) || !(rate.backward_Bps > 0)) {
      throw InputError("kernel cost: the streaming rates of '" + kind + "' must be positive");
    }
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

// A GEMM cut into tiles: how many, and what they leave of the units' peak. Where the output has fewer tiles than
// there are units, the reduction is split among them as well (split-K, as cuBLAS and cuDNN do for a weights'
// gradient: a small output summed over many pixels), each split at least a tile deep; the splits' partial outputs
// are written and summed, `split_bytes` more memory traffic.
struct Tiling {
  double tiles = 1;
  double efficiency = 1;
  double split_bytes = 0;
};

// `gemm` on tiles of tile_m x tile_n.
Tiling tiling_on(const KernelMachine& machine, const GemmShape& gemm, std::int64_t tile_m, std::int64_t tile_n) {
  const std::int64_t tiles_m = ceil_div(gemm.m, tile_m);
  const std::int64_t tiles_n = ceil_div(gemm.n, tile_n);
  const std::int64_t output_tiles = tiles_m * tiles_n * gemm.count;
  const std::int64_t splits = std::max<std::int64_t>(
      1, std::min(machine.parallel_units / std::max<std::int64_t>(output_tiles, 1), gemm.k / tile_m));
  Tiling tiling;
  tiling.tiles = static_cast<double>(output_tiles * splits);
  const double units = machine.parallel_units;
  const double busy_units = tiling.tiles / (std::ceil(tiling.tiles / units) * units);  // the last wave's idle units
  const double useful_area = static_cast<double>(gemm.m) / static_cast<double>(tiles_m * tile_m) *
                             static_cast<double>(gemm.n) / static_cast<double>(tiles_n * tile_n);
  const double k = static_cast<double>(gemm.k) / static_cast<double>(splits);
  tiling.efficiency = busy_units * useful_area * k / (k + machine.tile_k_overhead);
  if (splits > 1) {
    tiling.split_bytes =
        2 * kFloatBytes * static_cast<double>(splits) * static_cast<double>(gemm.m * gemm.n * gemm.count);
  }
  return tiling;
}

// `gemm` on the library's tile that leaves the most of the units, as cuBLAS and CUTLASS pick a thread-block shape
// per GEMM; of equals, the one that splits the reduction less, then `tile` or the first listed.
Tiling tiling_of(const KernelMachine& machine, const GemmShape& gemm) {
  if (gemm.m < 1 || gemm.n < 1 || gemm.k < 1 || gemm.count < 1) return {};  // no work: nothing to lose
  Tiling best = tiling_on(machine, gemm, machine.tile_m, machine.tile_n);
  for (const auto& [tile_m, tile_n] : machine.tiles) {
    const Tiling other = tiling_on(machine, gemm, tile_m, tile_n);
    if (other.efficiency > best.efficiency ||
        (other.efficiency == best.efficiency && other.split_bytes < best.split_bytes)) {
      best = other;
    }
  }
  return best;
}

}  // namespace

double gemm_shape_efficiency(const KernelMachine& machine, const GemmShape& gemm) {
  check_machine(machine);
  return tiling_of(machine, gemm).efficiency;
}

namespace {

// A streaming kernel's rate per unit, the units it runs on and its dispatch, where the library's rate for its kind
// is known.
struct Streaming {
  double Bps = 0;
  double units = 1;
  double fixed_s = 0;
  double work_per_byte = 1;  // > 1 where the library pads channels to its blocks
  double per_image_s = 0;
  double images = 0;
};

// The work a blocked library does per byte on `channels` channels: the pass's padded share of it on channels
// rounded up to whole blocks.
double padded_work(const platforms::StreamingRate& rate, KernelPass pass, std::int64_t channels) {
  if (rate.channel_block < 1 || channels < 1) return 1;
  const double share = pass == KernelPass::kForward ? rate.forward_padded_share : rate.backward_padded_share;
  const std::int64_t padded = ceil_div(channels, rate.channel_block) * rate.channel_block;
  return 1 - share + share * static_cast<double>(padded) / static_cast<double>(channels);
}

// A blocked library's cost per image for a last block that is not whole.
double tail_seconds(const platforms::StreamingRate& rate, KernelPass pass, std::int64_t channels) {
  if (rate.channel_block < 1 || channels < 1 || channels % rate.channel_block == 0) return 0;
  return pass == KernelPass::kForward ? rate.forward_tail_s : rate.backward_tail_s;
}

// `flops` of `gemm` (none for a streaming kernel) moving `bytes`, as kernel_cost prices it.

KernelCost priced(const KernelMachine& machine, const std::optional<GemmShape>& gemm, double flops, double bytes,
                  double resident_bytes, std::optional<Streaming> streaming = std::nullopt,
                  const platforms::GemmLibrary* library = nullptr) {
  KernelCost cost;
  double units_taking_part = streaming ? streaming->units : machine.parallel_units;
  if (gemm) {
    const Tiling tiling = tiling_of(machine, *gemm);
    cost.shape_efficiency = tiling.efficiency;
    units_taking_part = std::min(units_taking_part, tiling.tiles);
    bytes += tiling.split_bytes;
  }
  cost.compute_s = flops / (machine.peak_flops * machine.efficiency * cost.shape_efficiency);
  if (streaming) {
    cost.compute_s = (bytes * streaming->work_per_byte / streaming->Bps + streaming->per_image_s * streaming->images) /
                     units_taking_part;
  }
  cost.tier = serving_tier(machine, bytes, resident_bytes);
  if (cost.tier) cost.memory_s = bytes / machine.tiers[*cost.tier].bandwidth_Bps;
  // A kernel on one unit forks nothing.
  cost.fixed_s = (streaming ? streaming->fixed_s : machine.kernel_fixed_s) +
                 (units_taking_part > 1 ? machine.sync_s_per_unit * units_taking_part : 0);
  if (gemm && library != nullptr && library->packs_operands) {
    const double operands =
        kFloatBytes * static_cast<double>(gemm->count) * static_cast<double>(gemm->m * gemm->k + gemm->k * gemm->n);
    if (library->pack_Bps > 0) {
      cost.pack_s = operands / library->pack_Bps / units_taking_part;  // each thread packs its panels
    } else if (cost.tier) {
      cost.pack_s = 2 * operands / machine.tiers[*cost.tier].bandwidth_Bps;
    }
  }
  cost.seconds = std::max(cost.compute_s, cost.memory_s) + cost.pack_s + cost.fixed_s;
  return cost;
}

// The library a CPU runs `kernel`'s GEMM on, if its layer kind names one.
const platforms::GemmLibrary* library_of(const KernelMachine& machine, const LayerKernel& kernel) {
  if (!kernel.gemm || !kernel.kind) return nullptr;
  const auto library = machine.gemm_library.find(std::string(to_string(*kernel.kind)));
  return library == machine.gemm_library.end() ? nullptr : &library->second;
}

// A lowering library's seconds per column element for `pass`.
double lowering_seconds(const platforms::GemmLibrary& library, KernelPass pass) {
  switch (pass) {
    case KernelPass::kForward:
      return library.forward_lowering_s;
    case KernelPass::kBackwardData:
      return library.backward_data_lowering_s;
    case KernelPass::kBackwardWeights:
      return library.backward_weights_lowering_s;
  }
  return 0;
}

// `machine` as `library` runs `kernel`'s GEMM: at the library's own share of the efficiency, on one unit at one
// unit's peak up to its threshold and on every unit above it, at its share of their speed where more than one.
KernelMachine library_machine(const KernelMachine& machine, const LayerKernel& kernel,
                              const platforms::GemmLibrary* library) {
  if (library == nullptr) return machine;
  KernelMachine cut = machine;
  cut.efficiency *= library->relative_efficiency;
  if (kernel.gemm->flops() / 2 <= library->one_thread_up_to) {
    cut.peak_flops /= machine.parallel_units;
    cut.parallel_units = 1;
  }
  if (cut.parallel_units > 1) cut.efficiency *= library->parallel_efficiency;
  return cut;
}

}  // namespace

KernelCost kernel_cost(const KernelMachine& whole, const LayerKernel& kernel, double resident_bytes) {
  check_machine(whole);
  const platforms::GemmLibrary* library = library_of(whole, kernel);
  const KernelMachine machine = library_machine(whole, kernel, library);
  std::optional<Streaming> streaming;
  if (!kernel.gemm && kernel.kind) {
    const auto rate = machine.streaming.find(std::string(to_string(*kernel.kind)));
    if (rate != machine.streaming.end()) {
      const platforms::StreamingRate& known = rate->second;
      streaming = Streaming{kernel.pass == KernelPass::kForward ? known.forward_Bps : known.backward_Bps,
                            known.threaded ? std::max(1.0, machine.parallel_units * known.parallel_efficiency) : 1.0,
                            known.fixed_s.value_or(machine.kernel_fixed_s),
                            padded_work(known, kernel.pass, kernel.channels),
                            known.per_image_s + tail_seconds(known, kernel.pass, kernel.channels),
                            static_cast<double>(kernel.batch)};
    }
  }
  KernelCost cost = priced(machine, kernel.gemm, kernel.flops, kernel.bytes, resident_bytes, streaming, library);
  if (library != nullptr && kernel.lowered_elements > 0) {
    // Each unit lowers the images (or the share of one image) whose GEMMs it runs.
    cost.lowering_s = static_cast<double>(kernel.lowered_elements) * lowering_seconds(*library, kernel.pass) /
                      std::min<double>(machine.parallel_units, tiling_of(machine, *kernel.gemm).tiles);
    cost.seconds += cost.lowering_s;
  }
  if (kernel.winograd) {
    for (const std::int64_t tile : machine.winograd_tiles) {
      // Non-fused: the GEMMs' three operands, transformed, are written and read back in fp32.
      const GemmShape w = kernel.winograd->gemm(tile);
      const double operands = static_cast<double>(w.count) * static_cast<double>(w.m * w.k + w.k * w.n + w.m * w.n);
      KernelCost fast = priced(machine, w, w.flops(), kernel.bytes + 2 * kFloatBytes * operands, resident_bytes);
      if (fast.seconds < cost.seconds) {
        fast.winograd_tile = tile;
        cost = fast;
      }
    }
  }
  return cost;
}

}  // namespace dsgd::simulate
