#pragma once
// A kernel's time from its shape (docs/simulation.md "Kernels by shape"):
//   seconds = max(compute, memory) + fixed
//   compute = FLOPs / (peak x efficiency x shape efficiency); a streaming kernel of a layer kind the library's
//             rate is known for: (bytes x its padded blocks' work / that rate + work per image x images) / the
//             units the library spreads it over (platforms::StreamingRate)
//   memory  = bytes / the bandwidth of the tier that holds the kernel's data
//   fixed   = the per-kernel cost (a GPU's launch, a framework's dispatch) + a many-core CPU's fork-join cost per
//             unit taking part (none on one unit)
//   a CPU BLAS a layer kind's GEMMs are called on (gemm_library) may pack both operands (their bytes at its
//   packing rate, or read and written once more at the memory tier's) and run a GEMM on only as many units as it has
//   work for; a library that lowers a convolution to a GEMM adds its column matrix's elements at its rate per element
//   for the pass, over the units the GEMM runs on
// The shape efficiency of a GEMM (a convolution as implicit GEMM, an inner product) is what its tiles leave of the
// device's parallel units: the output is cut into tiles of tile_m x tile_n, each unit computes one tile at a time,
// so the last wave of tiles leaves units idle, a partial tile computes padding, and a short k cannot fill a tile's
// pipeline (tile_k_overhead steps of fixed cost per tile). A library with several tiles runs each GEMM on the one
// that leaves the most. A streaming kernel (ReLU, pooling, an update) has none: its bytes bound it. `efficiency` is
// the rest, one number per device, measured or FITTED (and then printed so).

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/layer_kernels.hpp"
#include "platforms/platform.hpp"

namespace dsgd::simulate {

// Where a rank's data can live, fastest first. A tier of kernel scope (an on-chip cache) serves a kernel whose own
// bytes fit it; a tier of iteration scope (HBM, MCDRAM, DDR) serves the kernels of a rank whose whole resident
// set (weights, gradients, activations, its data) fits it: in MCDRAM's cache mode or on a GPU, an iteration
// touches all of that set, and what does not fit comes from the next tier.
struct MemoryTier {
  enum class Scope { kKernel, kIteration };
  std::string name;
  double capacity_bytes = 0;  // this rank's share
  double bandwidth_Bps = 0;   // this rank's share
  Scope scope = Scope::kIteration;
};

struct KernelMachine {
  double peak_flops = 0;    // of the rank's unit (a device, or a group of cores)
  int parallel_units = 1;   // a GPU's SMs, or the cores of a CPU rank
  std::int64_t tile_m = 1;  // the output block one unit computes at a time: a GPU GEMM's thread-block tile,
  std::int64_t tile_n = 1;  // 1 x 1 on a CPU whose libraries compute the edges on what is there
  // More [m, n] tiles the library can choose from: a GEMM runs on whichever of these and tile_m x tile_n leaves the
  // most of the units (cuBLAS's and CUTLASS's choice of thread-block shape per GEMM); empty: the one tile.
  std::vector<std::array<std::int64_t, 2>> tiles;
  double tile_k_overhead = 0;     // a tile's fixed cost (prologue, epilogue) in steps of k
  double kernel_fixed_s = 0;      // per kernel
  double sync_s_per_unit = 0;     // per kernel and unit taking part (a barrier across a many-core CPU's threads)
  std::vector<MemoryTier> tiers;  // fastest first; the last serves whatever fits nowhere else
  double efficiency = 1;          // what remains of peak once the shape is accounted for
  // The output tiles m of the Winograd F(m x m, 3x3) algorithms the library has for 3x3 convolutions of stride 1
  // (LayerKernel::winograd), each priced as its GEMMs plus their operands written and read back through memory
  // (non-fused); the kernel takes the fastest of these and the direct form, as an autotuning library does.
  std::vector<std::int64_t> winograd_tiles;
  // The library's rates for a layer kind's streaming kernels (platforms::StreamingRate, bytes per second on one
  // unit): such a kernel computes at its pass's rate over the units it is spread over, in place of its FLOPs at
  // peak; the memory tier still bounds it.
  std::map<std::string, platforms::StreamingRate> streaming;
  std::map<std::string, platforms::GemmLibrary> gemm_library;  // by layer kind (platforms::KernelModel)
};

struct KernelCost {
  double compute_s = 0;
  double memory_s = 0;
  double fixed_s = 0;
  double pack_s = 0;                // a CPU BLAS's copies of both operands into packed panels
  double lowering_s = 0;            // a convolution's im2col or col2im, where the library lowers it to a GEMM
  double seconds = 0;               // max(compute_s, memory_s) + pack_s + lowering_s + fixed_s
  double shape_efficiency = 1;      // of a GEMM: busy units x useful tile area x filled pipeline; 1 otherwise
  std::optional<std::size_t> tier;  // index into KernelMachine::tiers; empty with no tiers (memory is free)
  std::int64_t winograd_tile = 0;   // m where priced as Winograd F(m x m, 3x3); 0: the direct form
};

// The tiles, waves and efficiency of `gemm` on `machine` (shape_efficiency of kernel_cost).
double gemm_shape_efficiency(const KernelMachine& machine, const GemmShape& gemm);

// The cost of `kernel` on `machine` for a rank whose resident set is `resident_bytes`. Throws InputError for a
// machine without a positive peak, units or tile, or a tier without positive capacity and bandwidth.
KernelCost kernel_cost(const KernelMachine& machine, const LayerKernel& kernel, double resident_bytes);

}  // namespace dsgd::simulate
