// simulate/kernel_cost.hpp: a kernel's time from its shape. Each term is checked alone on a machine built for it:
// the last wave's idle units, a partial tile's padding, a short k's unfilled pipeline, the tier that holds the
// data, the fixed cost per kernel and per unit; then the model's direction on real layers (a bigger batch fills
// more of a GPU).

#include "simulate/kernel_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/model_zoo.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

// 4 units of 2 x 2 tiles at 1 GFLOP/s each, no overheads, no memory tiers.
KernelMachine small_machine() {
  KernelMachine machine;
  machine.peak_flops = 4e9;
  machine.parallel_units = 4;
  machine.tile_m = 2;
  machine.tile_n = 2;
  return machine;
}

LayerKernel gemm_kernel(const GemmShape& gemm) {
  LayerKernel kernel;
  kernel.gemm = gemm;
  kernel.flops = gemm.flops();
  return kernel;
}

TEST(SimulateKernelCost, AGemmThatFillsEveryUnitAndTileRunsAtPeakTimesEfficiency) {
  KernelMachine machine = small_machine();
  machine.efficiency = 0.5;
  const LayerKernel kernel = gemm_kernel({4, 4, 1000});  // 4 tiles: one wave of 4 units
  const KernelCost cost = kernel_cost(machine, kernel, 0);
  EXPECT_DOUBLE_EQ(cost.shape_efficiency, 1);
  EXPECT_DOUBLE_EQ(cost.compute_s, kernel.flops / (4e9 * 0.5));
  EXPECT_DOUBLE_EQ(cost.seconds, cost.compute_s);
  EXPECT_FALSE(cost.tier) << "no tiers: memory is free";
}

TEST(SimulateKernelCost, TheLastWaveTilePaddingAndShortKEachCostTheirShare) {
  const KernelMachine machine = small_machine();
  // 5 tiles on 4 units: two waves, 5 of 8 unit-slots busy.
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(machine, {10, 2, 1000}), 5.0 / 8);
  // 3 x 4 output in 2 x 2 tiles: 4 tiles (one wave) of 16 cells for 12 useful ones.
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(machine, {3, 4, 1000}), 12.0 / 16);
  // Two groups of a 2 x 4 output: 4 tiles, one wave, all useful.
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(machine, {2, 4, 1000, 2}), 1);
  // A tile's pipeline costs 8 steps of k: k = 8 runs at half the rate.
  KernelMachine pipelined = machine;
  pipelined.tile_k_overhead = 8;
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(pipelined, {4, 4, 8}), 0.5);
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(machine, {0, 4, 8}), 1) << "no work, nothing lost";
}

TEST(SimulateKernelCost, DataComesFromTheFastestTierThatHoldsIt) {
  KernelMachine machine = small_machine();
  machine.tiers = {{"l2", 1e6, 1e12, MemoryTier::Scope::kKernel},
                   {"mcdram", 1e9, 4e11, MemoryTier::Scope::kIteration},
                   {"ddr", 1e11, 9e10, MemoryTier::Scope::kIteration}};
  LayerKernel streaming;
  streaming.flops = 1;
  streaming.bytes = 5e5;
  // Its own bytes fit the cache, whatever the rank holds.
  EXPECT_EQ(kernel_cost(machine, streaming, 5e10).tier, 0U);
  streaming.bytes = 5e6;
  // Past the cache: MCDRAM while the rank's resident set fits it, DDR once it outgrows it.
  const KernelCost in_mcdram = kernel_cost(machine, streaming, 8e8);
  EXPECT_EQ(in_mcdram.tier, 1U);
  EXPECT_DOUBLE_EQ(in_mcdram.memory_s, 5e6 / 4e11);
  EXPECT_DOUBLE_EQ(in_mcdram.seconds, in_mcdram.memory_s) << "memory-bound: the FLOP is hidden";
  const KernelCost in_ddr = kernel_cost(machine, streaming, 2e9);
  EXPECT_EQ(in_ddr.tier, 2U);
  EXPECT_DOUBLE_EQ(in_ddr.memory_s, 5e6 / 9e10);
  // Beyond every tier the last one serves.
  EXPECT_EQ(kernel_cost(machine, streaming, 1e12).tier, 2U);
}

TEST(SimulateKernelCost, FixedCostsArePerKernelAndPerUnitTakingPart) {
  KernelMachine machine = small_machine();
  machine.kernel_fixed_s = 5e-6;
  machine.sync_s_per_unit = 1e-6;
  // 2 tiles keep 2 of the 4 units (k = 3 is too short to split): they alone take part in the fork and join.
  const KernelCost two_tiles = kernel_cost(machine, gemm_kernel({4, 2, 3}), 0);
  EXPECT_DOUBLE_EQ(two_tiles.fixed_s, 5e-6 + 2e-6);
  EXPECT_DOUBLE_EQ(two_tiles.seconds, two_tiles.compute_s + two_tiles.fixed_s);
  LayerKernel streaming;
  streaming.flops = 1e3;
  streaming.bytes = 1e3;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, streaming, 0).fixed_s, 5e-6 + 4e-6) << "every unit streams";
  // One tile keeps one unit: nothing to fork.
  EXPECT_DOUBLE_EQ(kernel_cost(machine, gemm_kernel({2, 2, 3}), 0).fixed_s, 5e-6);
}

// A library's measured rate for a layer kind's streaming kernels replaces their FLOPs at peak: the pass's rate over
// the units it is spread over (one where the library does not thread it, which then forks nothing), with the kind's
// own dispatch where it has one.
TEST(SimulateKernelCost, AStreamingKernelOfAKindWithALibraryRateRunsAtThatRate) {
  KernelMachine machine = small_machine();
  machine.kernel_fixed_s = 5e-6;
  machine.sync_s_per_unit = 1e-6;
  machine.streaming["relu"] = {.forward_Bps = 1e9, .backward_Bps = 2e9, .fixed_s = std::nullopt, .threaded = true};
  machine.streaming["softmax"] = {.forward_Bps = 1e9, .backward_Bps = 1e9, .fixed_s = 1e-7, .threaded = false};
  LayerKernel relu;
  relu.kind = LayerKind::kReLU;
  relu.flops = 1e3;
  relu.bytes = 8e3;
  const KernelCost forward = kernel_cost(machine, relu, 0);
  EXPECT_DOUBLE_EQ(forward.compute_s, 8e3 / (1e9 * 4));
  EXPECT_DOUBLE_EQ(forward.fixed_s, 5e-6 + 4e-6);
  relu.pass = KernelPass::kBackwardData;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, relu, 0).compute_s, 8e3 / (2e9 * 4)) << "the backward pass's rate";
  LayerKernel loss = relu;
  loss.kind = LayerKind::kSoftmax;
  const KernelCost one_unit = kernel_cost(machine, loss, 0);
  EXPECT_DOUBLE_EQ(one_unit.compute_s, 8e3 / 1e9);
  EXPECT_DOUBLE_EQ(one_unit.fixed_s, 1e-7) << "its own dispatch, and one unit forks nothing";
  LayerKernel pool = relu;
  pool.kind = LayerKind::kMaxPool;  // no rate known: FLOPs at peak, as before
  EXPECT_DOUBLE_EQ(kernel_cost(machine, pool, 0).compute_s, 1e3 / 4e9);
}

// The rest a library's streaming rate says: a pass on channels that do not fill its blocks does its padded share of
// the work on the whole blocks and pays for the last block per image; work per image (the loss's rows) adds to the
// bytes' time; threaded, it gets its share of the units' speed.
TEST(SimulateKernelCost, AStreamingKernelPaysForPaddedBlocksPerImageWorkAndItsParallelEfficiency) {
  KernelMachine machine = small_machine();  // 4 units
  machine.streaming["max_pool"] = {.forward_Bps = 1e9,
                                   .backward_Bps = 2e9,
                                   .parallel_efficiency = 0.5,
                                   .channel_block = 16,
                                   .forward_padded_share = 0.5,
                                   .backward_padded_share = 1,
                                   .forward_tail_s = 1e-6};
  machine.streaming["softmax"] = {.forward_Bps = 1e9, .backward_Bps = 1e9, .threaded = false, .per_image_s = 1e-8};
  LayerKernel pool;
  pool.kind = LayerKind::kMaxPool;
  pool.bytes = 8e3;
  pool.channels = 20;  // 2 blocks of 16: 32 channels' work on the padded share
  pool.batch = 3;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, pool, 0).compute_s, (8e3 * (0.5 + 0.5 * 32 / 20.0) / 1e9 + 3 * 1e-6) / 2)
      << "half the work padded, the last block's cost per image, on half of the 4 units' speed";
  pool.pass = KernelPass::kBackwardData;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, pool, 0).compute_s, 8e3 * 32 / 20.0 / (2e9 * 2));
  pool.channels = 32;
  pool.pass = KernelPass::kForward;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, pool, 0).compute_s, 8e3 / (1e9 * 2)) << "whole blocks pad nothing";
  LayerKernel loss;
  loss.kind = LayerKind::kSoftmax;
  loss.bytes = 8e3;
  loss.batch = 64;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, loss, 0).compute_s, 8e3 / 1e9 + 64 * 1e-8);
}

// A CPU BLAS a layer kind's GEMMs are called on runs a GEMM up to a threshold of work on one unit at one unit's peak
// and a larger one on every unit, and packs both operands first: their bytes read and written once more, or at its
// own packing rate, each unit packing its share.
TEST(SimulateKernelCost, ACpuBlasThreadsOnlyWithEnoughWorkAndPacksItsOperands) {
  KernelMachine machine = small_machine();
  machine.tiers = {{"memory", 1e12, 1e9, MemoryTier::Scope::kIteration}};
  machine.gemm_library["inner_product"] = {.one_thread_up_to = 2000, .packs_operands = true};
  LayerKernel small = gemm_kernel({4, 4, 100});  // 1,600 multiply-adds: under the threshold
  small.kind = LayerKind::kInnerProduct;
  const KernelCost one_thread = kernel_cost(machine, small, 0);
  EXPECT_DOUBLE_EQ(one_thread.compute_s, small.flops / 1e9) << "one unit of the four, one unit's peak";
  EXPECT_DOUBLE_EQ(one_thread.pack_s, 2 * 4.0 * (4 * 100 + 100 * 4) / 1e9);
  EXPECT_DOUBLE_EQ(one_thread.seconds, std::max(one_thread.compute_s, one_thread.memory_s) + one_thread.pack_s);
  LayerKernel large = gemm_kernel({4, 4, 200});  // 3,200 multiply-adds: every unit
  large.kind = LayerKind::kInnerProduct;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, large, 0).compute_s, large.flops / 4e9);
  machine.gemm_library["inner_product"].pack_Bps = 1e8;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, small, 0).pack_s, 4.0 * (4 * 100 + 100 * 4) / 1e8);
  EXPECT_DOUBLE_EQ(kernel_cost(machine, large, 0).pack_s, 4.0 * (4 * 200 + 200 * 4) / 1e8 / 4) << "a share each";
  LayerKernel convolution = small;  // no library named for it: every unit, nothing packed
  convolution.kind = LayerKind::kConvolution;
  const KernelCost whole = kernel_cost(machine, convolution, 0);
  EXPECT_DOUBLE_EQ(whole.compute_s, small.flops / 4e9);
  EXPECT_DOUBLE_EQ(whole.pack_s, 0);
}

// A library that lowers a convolution to a GEMM adds its column matrix at the pass's rate per element, spread over
// the units the GEMM runs on; a library's own share of the efficiency slows only its kind's GEMMs.
TEST(SimulateKernelCost, ALoweringLibraryAddsItsColumnsAndALibrarysShareSlowsOnlyItsGemms) {
  KernelMachine machine = small_machine();
  machine.gemm_library["convolution"] = {.forward_lowering_s = 1e-9, .backward_data_lowering_s = 2e-9};
  machine.gemm_library["inner_product"] = {.relative_efficiency = 0.5};
  LayerKernel convolution = gemm_kernel({4, 4, 1000});  // 4 tiles: every unit
  convolution.kind = LayerKind::kConvolution;
  convolution.lowered_elements = 8000;
  const KernelCost forward = kernel_cost(machine, convolution, 0);
  EXPECT_DOUBLE_EQ(forward.lowering_s, 8000 * 1e-9 / 4);
  EXPECT_DOUBLE_EQ(forward.seconds, forward.compute_s + forward.lowering_s);
  EXPECT_DOUBLE_EQ(forward.compute_s, convolution.flops / 4e9) << "the convolution's library runs at full share";
  convolution.pass = KernelPass::kBackwardData;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, convolution, 0).lowering_s, 8000 * 2e-9 / 4);
  convolution.pass = KernelPass::kBackwardWeights;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, convolution, 0).lowering_s, 0) << "no rate for this pass";
  convolution.pass = KernelPass::kForward;
  convolution.lowered_elements = 0;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, convolution, 0).lowering_s, 0) << "a 1x1 convolution lowers nothing";
  LayerKernel inner_product = gemm_kernel({4, 4, 1000});
  inner_product.kind = LayerKind::kInnerProduct;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, inner_product, 0).compute_s, inner_product.flops / (4e9 * 0.5));
}

TEST(SimulateKernelCost, ASmallOutputOverALongReductionIsSplitAmongTheIdleUnits) {
  KernelMachine machine = small_machine();
  machine.tiers = {{"hbm", 1e12, 1e9, MemoryTier::Scope::kIteration}};
  // One 2 x 2 tile summed over k = 1000: split four ways, one split per unit, the whole peak.
  LayerKernel weights_gradient = gemm_kernel({2, 2, 1000});
  weights_gradient.bytes = 1000;
  const KernelCost split = kernel_cost(machine, weights_gradient, 0);
  EXPECT_DOUBLE_EQ(split.shape_efficiency, 1);
  // The four partial 2 x 2 outputs are written and summed: 2 x 4 B x 4 x 4 more bytes.
  EXPECT_DOUBLE_EQ(split.memory_s, (1000 + 2 * 4 * 4 * 4) / 1e9);
  // A split is at least a tile deep: k = 3 stays whole, one unit of four busy.
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(machine, {2, 2, 3}), 0.25);
  // k = 5 allows two splits of at least a tile's 2: two units of four.
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(machine, {2, 2, 5}), 0.5);
}

// A library with several tiles runs each GEMM on the one that leaves the most of the units, and splits its
// reduction as that tile allows.
TEST(SimulateKernelCost, ALibraryWithSeveralTilesTakesTheBestForEachGemm) {
  // An A100-like device: 108 SMs, CUTLASS's 128 x 256 default tile. n = 96 (a head dimension) fills 96 of a tile's
  // 256 columns; 8192 rows make 64 tiles, one wave on 64 of the 108 units, k = 1024 too short to split further.
  KernelMachine gpu;
  gpu.peak_flops = 312e12;
  gpu.parallel_units = 108;
  gpu.tile_m = 128;
  gpu.tile_n = 256;
  const GemmShape head{8192, 96, 1024};
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(gpu, head), 64.0 / 108 * 96 / 256) << "without tiles: the one tile";
  gpu.tiles = {{256, 128}, {128, 128}, {256, 64}, {64, 256}, {128, 64}, {64, 128}, {64, 64}};
  // Expectation: 256 x 128 makes 32 tiles, each reduction split 3 ways (108 / 32) into 96 tiles, one wave of 96
  // units, 96 of a tile's 128 columns. The runner-up, 64 x 64: 256 tiles in 3 waves of 108, 96 of 128 columns.
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(gpu, head), 96.0 / 108 * 96 / 128);
  EXPECT_GT(96.0 / 108 * 96 / 128, 256.0 / 324 * 96 / 128);
  // 27 x 4 default tiles: one whole wave, all useful; no other tile does better.
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(gpu, {3456, 1024, 4096}), 1);

  // The split follows the chosen tile: a 2 x 2 output over k = 6 on 4 units. On 4 x 4 tiles one tile, too deep to
  // split (6 / 4 = 1), a quarter of it useful on one unit of four: 1/16. On 2 x 2 three splits of 2: 3/4.
  KernelMachine machine = small_machine();
  machine.tile_m = 4;
  machine.tile_n = 4;
  machine.tiers = {{"hbm", 1e12, 1e9, MemoryTier::Scope::kIteration}};
  LayerKernel weights_gradient = gemm_kernel({2, 2, 6});
  weights_gradient.bytes = 1000;
  EXPECT_DOUBLE_EQ(kernel_cost(machine, weights_gradient, 0).shape_efficiency, 1.0 / 16);
  EXPECT_DOUBLE_EQ(kernel_cost(machine, weights_gradient, 0).memory_s, 1000 / 1e9) << "no split, no partials";
  machine.tiles = {{2, 2}};
  const KernelCost split = kernel_cost(machine, weights_gradient, 0);
  EXPECT_DOUBLE_EQ(split.shape_efficiency, 0.75);
  // Three partial 2 x 2 outputs written and summed: 2 x 4 B x 3 x 4 more bytes.
  EXPECT_DOUBLE_EQ(split.memory_s, (1000 + 2 * 4 * 3 * 4) / 1e9);
}

// A 3x3 convolution of stride 1 with 64 channels in and out on a 56 x 56 grid, batch 8 (ResNet-50's layer1
// 3x3), forward.
LayerKernel conv3x3_forward() {
  const ModelSpec resnet = build_model("resnet50");
  for (std::size_t layer = 0; layer < resnet.layers.size(); ++layer) {
    if (resnet.layers[layer].name == "layer1.0.conv2") return layer_kernels(resnet, layer, 8).front();
  }
  throw std::logic_error("resnet50 has no layer1.0.conv2");
}

// A P100-like device: 56 SMs of 128 x 128 tiles at `peak_flops` in all.
KernelMachine p100_like(double peak_flops) {
  KernelMachine gpu;
  gpu.peak_flops = peak_flops;
  gpu.parallel_units = 56;
  gpu.tile_m = 128;
  gpu.tile_n = 128;
  return gpu;
}

TEST(SimulateKernelCost, Winograd3x3IsTakenWhereTheLibraryHasItAndItIsFaster) {
  KernelMachine gpu = p100_like(10e12);
  gpu.tiers = {{"hbm", 16e9, 700e9, MemoryTier::Scope::kIteration}};
  const LayerKernel kernel = conv3x3_forward();
  ASSERT_TRUE(kernel.winograd);
  const KernelCost direct = kernel_cost(gpu, kernel, 0);
  EXPECT_EQ(direct.winograd_tile, 0) << "a library without Winograd";
  gpu.winograd_tiles = {2, 4};
  const KernelCost fast = kernel_cost(gpu, kernel, 0);
  EXPECT_GT(fast.winograd_tile, 0);
  EXPECT_LT(fast.seconds, direct.seconds);
  // F(4x4, 3x3) does 36 multiplies per 16 outputs where the direct form does 144.
  const GemmShape f4 = kernel.winograd->gemm(4);
  EXPECT_NEAR(f4.flops() / kernel.flops, 36.0 / 144, 1e-12);
  // Its transformed operands go through memory: where memory is slow enough, the direct form wins.
  gpu.tiers = {{"hbm", 16e9, 1e9, MemoryTier::Scope::kIteration}};
  EXPECT_EQ(kernel_cost(gpu, kernel, 0).winograd_tile, 0);
}

TEST(SimulateKernelCost, ALargerBatchFillsMoreOfAGpu) {
  // A P100-like device (56 SMs, 128 x 128 tiles, 8 k-steps of overhead): LeNet's conv2 and ip1 at batch 1 leave
  // most SMs idle; at batch 256 they come near the device's rate.
  KernelMachine gpu = p100_like(9.3e12);
  gpu.tile_k_overhead = 8;
  const ModelSpec lenet = build_model("lenet");
  for (const std::size_t layer : {2U, 4U}) {
    double previous = 0;
    for (const std::int64_t batch : {1, 16, 64, 256}) {
      const double efficiency = kernel_cost(gpu, layer_kernels(lenet, layer, batch).front(), 0).shape_efficiency;
      EXPECT_GE(efficiency, previous) << lenet.layers[layer].name << " at batch " << batch;
      EXPECT_LE(efficiency, 1);
      previous = efficiency;
    }
    EXPECT_LT(kernel_cost(gpu, layer_kernels(lenet, layer, 1).front(), 0).shape_efficiency, 0.05);
  }
}

TEST(SimulateKernelCost, AMachineWithoutPeakUnitsOrTileIsAnInputError) {
  KernelMachine machine = small_machine();
  machine.parallel_units = 0;
  EXPECT_TRUE(dsgd::testing::input_error([&] {
                kernel_cost(machine, gemm_kernel({1, 1, 1}), 0);
              }).starts_with("kernel cost: a machine needs a positive peak"));
  machine = small_machine();
  machine.tiles = {{2, 0}};
  EXPECT_TRUE(dsgd::testing::input_error([&] {
                kernel_cost(machine, gemm_kernel({1, 1, 1}), 0);
              }).starts_with("kernel cost: a machine needs a positive peak"))
      << "every tile positive";
  machine = small_machine();
  machine.tiers = {{"hbm", 0, 1e12}};
  EXPECT_EQ(dsgd::testing::input_error([&] {
              kernel_cost(machine, gemm_kernel({1, 1, 1}), 0);
            }),
            "kernel cost: memory tier 'hbm' needs a positive capacity and bandwidth");
}

}  // namespace
}  // namespace dsgd::simulate
