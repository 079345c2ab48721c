#pragma once
// A flat platform whose one-core nodes are the cores of shared chips (platforms::SharedChip), in round numbers:
// the conv step of conv_step() takes kBusyS with every core of its chip busy and kAloneS with the others idle.
// What the compute-cost, SimGrid and analytic tests hold the chip model to.

#include "core/comm.hpp"
#include "platforms/platform.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::testing {

inline constexpr double kChipLatency_s = 1e-6;
inline constexpr double kChipBandwidth_Bps = 1e9;
inline constexpr double kChipPeakFlops = 1e9;  // one core
inline constexpr double kStepFlops = 1e9;
inline constexpr double kBusyS = 2.0;   // conv at 0.5 of the peak with every core busy
inline constexpr double kAloneS = 1.6;  // conv at 0.625 of the peak alone
inline constexpr double kGemmS = 4.0;   // gemm at 0.25 of the peak, measured busy only: the same alone

// `nodes` nodes, `chip_nodes` per chip of `cores` cores.
inline platforms::Platform shared_chip_platform(int nodes, int chip_nodes, int cores, double waiting_share = 0) {
  auto platform = simulate::flat_platform(nodes, kChipLatency_s, kChipBandwidth_Bps, kChipPeakFlops);
  auto& busy = platform.nodes.cpu.efficiency;
  busy.by_class["conv"] = 0.5;
  busy.by_class["gemm"] = 0.25;
  busy.sources["conv"] = "test: every core busy";
  busy.sources["gemm"] = "test: every core busy";
  platforms::SharedChip chip;
  chip.nodes = chip_nodes;
  chip.cores = cores;
  chip.waiting_share = waiting_share;
  chip.alone.by_class["conv"] = 0.625;
  chip.alone.sources["conv"] = "test: one core alone";
  chip.sources["nodes"] = "test";
  chip.sources["cores"] = "test";
  chip.sources["waiting_share"] = "test";
  platform.nodes.shared_chip = chip;
  return platform;
}

inline ComputeStep conv_step() { return {kStepFlops, "conv", Category::kForwardBackward, {}, 0}; }
inline ComputeStep gemm_step() { return {kStepFlops, "gemm", Category::kForwardBackward, {}, 0}; }

}  // namespace dsgd::testing
