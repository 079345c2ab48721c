// Weak scaling in simulation: size-only training of catalog algorithms on described platforms, compute rates per
// kernel class and compute noise.

#include "simulate/weak_scaling.hpp"

#include <gtest/gtest.h>

#include "algorithms/algorithm.hpp"
#include "core/model_zoo.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"
#include "simulate/kernel_cost.hpp"
#include "simulate/study_entries.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::simulate {
namespace {

using testing::error_of;

// A deterministic algorithm without a master from the catalog (which one does not matter here).
std::string synchronous_algorithm() {
  for (const auto& entry : algorithms::algorithm_catalog()) {
    if (entry.info.synchronous && !entry.info.has_master) return entry.info.name;
  }
  throw InternalError("the catalog has no synchronous algorithm without a master");
}

ScalingOptions knl_options(std::vector<int> workers) {
  ScalingOptions options;
  options.algorithm = synchronous_algorithm();
  options.model = "lenet";
  options.hyper.batch = 16;
  options.workers = std::move(workers);
  options.iterations = 2;
  options.ranks_per_node = 4;  // seed 000 sec. 6.2: four parts per KNL chip
  return options;
}

// 8 workers of an asynchronous algorithm without a master, a node each (each its own noise), for 20 iterations: the
// workers meet only at the end of a round.
ScalingOptions asynchronous_options() {
  ScalingOptions options = knl_options({8});
  options.algorithm.clear();
  for (const auto& entry : algorithms::algorithm_catalog()) {
    if (!entry.info.synchronous && !entry.info.has_master) options.algorithm = entry.info.name;
  }
  if (options.algorithm.empty()) throw InternalError("the catalog has no asynchronous algorithm without a master");
  options.iterations = 20;
  options.ranks_per_node = 1;
  return options;
}

TEST(WeakScaling, KnlPointsRecordTheirSizesAndLevel) {
  const auto platform = platforms::catalog_platform("cori-knl");
  const auto points = simulate_weak_scaling(platform, knl_options({4, 8}));
  ASSERT_EQ(points.size(), 2U);
  EXPECT_EQ(points[1].ranks, 8);
  EXPECT_EQ(points[1].nodes, 2);
  EXPECT_EQ(points[1].per_rank.size(), 8U);
  EXPECT_EQ(points[0].efficiency, 1.0);
  EXPECT_GT(points[1].efficiency, 0.0);  // LeNet at peak computes for microseconds: the network dominates
  EXPECT_LE(points[1].efficiency, 1.0);  // a second node only adds communication
  EXPECT_EQ(points[1].fidelity, Fidelity::kMessage);
}

// A point's results entry holds its numbers and the mean rank's breakdown.
TEST(WeakScaling, APointsEntryHoldsItsNumbersAndTheMeanRanksBreakdown) {
  const auto platform = platforms::catalog_platform("cori-knl");
  const auto options = knl_options({8});
  const auto point = simulate_weak_scaling(platform, options).front();
  const auto entry = to_entry(point, options, platform.name);
  EXPECT_EQ(entry.platform, "cori-knl");
  EXPECT_EQ(entry.fidelity, "message");
  EXPECT_DOUBLE_EQ(entry.counters.at("nodes"), 2);
  EXPECT_DOUBLE_EQ(entry.counters.at("seconds_per_iteration"), point.seconds_per_iteration);
  EXPECT_EQ(entry.counters.count("topk_ratio"), 0U) << "no compression";
  double compute_s = 0;
  for (const auto& rank : point.per_rank) compute_s += rank[Category::kForwardBackward] / 8;
  EXPECT_DOUBLE_EQ(entry.breakdown_s.at(std::string(to_string(Category::kForwardBackward))), compute_s);
}

TEST(WeakScaling, KernelEfficiencySlowsComputeByItsFraction) {
  auto platform = platforms::catalog_platform("cori-knl");
  const double at_peak =
      simulate_weak_scaling(platform, knl_options({4})).front().per_rank[0][Category::kForwardBackward];
  platform.nodes.cpu.efficiency.by_class["conv"] = 0.25;
  const double at_quarter =
      simulate_weak_scaling(platform, knl_options({4})).front().per_rank[0][Category::kForwardBackward];
  EXPECT_NEAR(at_quarter, 4 * at_peak, 1e-9 * at_quarter);
}

// A device that describes how it runs kernels (platforms::KernelModel) prices a training step as its layer kernels,
// each by shape (docs/simulation.md "Kernels by shape"): the simulated for/backward time is their sum per iteration.
TEST(WeakScaling, ADeviceThatDescribesItsKernelsPricesEachByShape) {
  auto platform = platforms::catalog_platform("p100-roce-25g");
  platform.noise = {};
  ScalingOptions options = knl_options({1});
  options.ranks_per_node = 0;
  const double by_class = simulate_weak_scaling(platform, options).front().per_rank[0][Category::kForwardBackward];
  // The device's whole share (one rank per device): the machine is the model with the device's peak and memory.
  const KernelMachine machine{
      .peak_flops = platform.nodes.devices[0].peak_flops,
      .parallel_units = 56,
      .tile_m = 128,
      .tile_n = 64,
      .tiles = {},
      .tile_k_overhead = 8,
      .kernel_fixed_s = 5e-6,
      .tiers = {{platform.nodes.devices[0].memory.name, platform.nodes.devices[0].memory.size_bytes.value_or(1e300),
                 platform.nodes.devices[0].memory.bandwidth_Bps}},
      .efficiency = 0.5,
      .winograd_tiles = {},
      .streaming = {},
      .gemm_library = {}};
  platforms::KernelModel& model = platform.nodes.devices.at(0).kernels.emplace();
  model.parallel_units = machine.parallel_units;
  model.tile_m = machine.tile_m;
  model.tile_n = machine.tile_n;
  model.tile_k_overhead = machine.tile_k_overhead;
  model.fixed_s = machine.kernel_fixed_s;
  model.efficiency = machine.efficiency;
  const double by_shape = simulate_weak_scaling(platform, options).front().per_rank[0][Category::kForwardBackward];

  const ModelSpec lenet = build_model("lenet");
  const double resident =
      12.0 * static_cast<double>(lenet.parameters()) + 32.0 * static_cast<double>(lenet.activation_bytes());
  double expected = 0;
  for (const LayerKernel& kernel : iteration_kernels(lenet, 16)) {
    expected += kernel_cost(machine, kernel, resident).seconds;
  }
  expected *= static_cast<double>(options.iterations);
  EXPECT_NEAR(by_shape, expected, 1e-9 * expected);
  EXPECT_GT(by_shape, 2 * by_class) << "LeNet at batch 16 leaves most of 56 SMs idle: far below the class rate";
}

// A fat tree's links are full duplex: a flat ring over two nodes of 4 GPUs sends one chunk out of each node while
// it receives another, so its 14 steps take 2 S (P-1)/P over the 25 Gb/s NIC, not twice that.
TEST(WeakScaling, AFatTreesLinksCarryEachDirectionAtFullBandwidth) {
  const auto platform = platforms::catalog_platform("p100-roce-25g");
  ASSERT_EQ(platform.network.topology.kind(), platforms::TopologyKind::kFatTree);
  ScalingOptions options;
  options.algorithm = "sync-sgd";
  options.model = "resnet50";
  options.hyper.batch = 1;
  options.workers = {8};
  options.iterations = 2;
  const auto point = simulate_weak_scaling(platform, options).front();
  ASSERT_EQ(point.nodes, 2);
  const double gradient_bytes = 4.0 * static_cast<double>(build_model("resnet50").parameters());
  const double ring_s = 2 * gradient_bytes * 7 / 8 / platform.network.link.bandwidth_Bps;
  EXPECT_NEAR(point.exposed_comm_s_per_iteration, ring_s, 0.05 * ring_s)
      << "expectation " << ring_s << " s; half duplex would take twice it";
}

// Without its own link bandwidth a fabric is not a bottleneck, as docs/platform-schema.md says: on a fat tree of two
// leaves of two nodes, one uplink each, recursive doubling's exchanges between the leaves (two nodes' at once through
// one uplink) take what they take on a star. With the fabric's links at a node's bandwidth they queued there.
TEST(WeakScaling, AFabricWithoutItsOwnBandwidthIsNotABottleneck) {
  auto tree = platforms::catalog_platform("p100-roce-25g");
  tree.nodes.count = 4;
  tree.network.topology.shape = platforms::FatTreeTopology{{2, 2}, {1, 1}, {1, 1}};
  tree.network.topology.link_bandwidth_Bps.reset();
  tree.network.topology.link_latency_s.reset();
  auto star = tree;
  star.network.topology.shape = platforms::StarTopology{};
  ScalingOptions options;
  options.algorithm = "sync-sgd";
  options.model = "resnet50";
  options.hyper.batch = 1;
  options.hyper.allreduce = AllreduceAlgorithm::kRecursiveDoubling;
  options.workers = {16};
  options.iterations = 2;
  const auto on_tree = simulate_weak_scaling(tree, options).front();
  ASSERT_EQ(on_tree.nodes, 4);
  const double on_star = simulate_weak_scaling(star, options).front().exposed_comm_s_per_iteration;
  EXPECT_NEAR(on_tree.exposed_comm_s_per_iteration, on_star, 0.01 * on_star);
}

TEST(WeakScaling, NoiseMakesTheSlowestNodeSetThePaceAndRepeats) {
  auto platform = platforms::catalog_platform("cori-knl");
  const double quiet = simulate_weak_scaling(platform, knl_options({16})).front().seconds_per_iteration;
  platform.noise.distribution = platforms::NoiseDistribution::kLognormal;
  platform.noise.spread = 0.2;
  const double noisy = simulate_weak_scaling(platform, knl_options({16})).front().seconds_per_iteration;
  const double again = simulate_weak_scaling(platform, knl_options({16})).front().seconds_per_iteration;
  EXPECT_GT(noisy, quiet);  // mean-1 factors, but each iteration waits for the slowest of 4 nodes
  EXPECT_EQ(noisy, again);
}

// Workers that meet only at the end of a round (an asynchronous algorithm without a master) wait there for the
// slowest worker's whole round: independent draws per step average out over the round's iterations, a node that
// stays slow for the round does not.
TEST(WeakScaling, PersistentNoiseMakesARoundWaitForTheSlowestWorker) {
  const ScalingOptions options = asynchronous_options();
  auto platform = platforms::catalog_platform("cori-knl");
  platform.noise.distribution = platforms::NoiseDistribution::kLognormal;
  platform.noise.spread = 0.2;
  const double independent = simulate_weak_scaling(platform, options).front().seconds_per_iteration;
  platform.noise.correlation_s = 1e6;  // a node keeps its speed for the whole run
  const double persistent = simulate_weak_scaling(platform, options).front().seconds_per_iteration;
  EXPECT_GT(persistent, 1.05 * independent);
  EXPECT_EQ(simulate_weak_scaling(platform, options).front().seconds_per_iteration, persistent) << "repeatable";
  // The analytic level (synchronous algorithms only) keeps the state per node as well, and repeats.
  auto analytic = knl_options({64});
  analytic.fidelity = Fidelity::kAnalytic;
  const double once = simulate_weak_scaling(platform, analytic).front().seconds_per_iteration;
  EXPECT_GT(once,
            simulate_weak_scaling(platforms::catalog_platform("cori-knl"), analytic).front().seconds_per_iteration)
      << "each step waits for the slowest of 16 nodes";
  EXPECT_EQ(simulate_weak_scaling(platform, analytic).front().seconds_per_iteration, once);
}

// A run measured in rounds (validate's, a test evaluation after each) is predicted in the same rounds: each round end
// waits for the slowest worker, and the more rounds, the more such waits, where one round lets the workers' noise
// average out over the whole run.
TEST(WeakScaling, RoundEndsWaitForTheSlowestWorker) {
  ScalingOptions options = asynchronous_options();
  auto platform = platforms::catalog_platform("cori-knl");
  platform.nodes.cpu.efficiency.by_class["conv"] = 0.01;  // compute, not the network, sets the pace (as on a laptop)
  const double quiet_once = simulate_weak_scaling(platform, options).front().seconds_per_iteration;
  options.round_iterations = 2;
  const double quiet_rounds = simulate_weak_scaling(platform, options).front().seconds_per_iteration;
  EXPECT_GT(quiet_rounds, quiet_once) << "each round end adds the losses' allreduce";
  platform.noise.distribution = platforms::NoiseDistribution::kLognormal;
  platform.noise.spread = 0.2;
  options.round_iterations = 0;
  const double one_round = simulate_weak_scaling(platform, options).front().seconds_per_iteration;
  options.round_iterations = 2;
  const double ten_rounds = simulate_weak_scaling(platform, options).front().seconds_per_iteration;
  EXPECT_GT(ten_rounds - one_round, 3 * (quiet_rounds - quiet_once)) << "and, with noise, a wait for the slowest";
  options.round_iterations = -1;
  EXPECT_NE(error_of<InputError>([&] { simulate_weak_scaling(platform, options); }).find("per round"),
            std::string::npos);
}

TEST(WeakScaling, BadOptionsAreInputErrors) {
  const auto platform = platforms::catalog_platform("cori-knl");
  auto options = knl_options({});
  EXPECT_THROW(simulate_weak_scaling(platform, options), InputError);
  options = knl_options({4});
  options.algorithm = "no-such-algorithm";
  EXPECT_THROW(simulate_weak_scaling(platform, options), InputError);
  options = knl_options({1000000});
  EXPECT_NE(error_of<InputError>([&] { simulate_weak_scaling(platform, options); }).find("holds"), std::string::npos);
}

TEST(WeakScaling, KernelEfficiencyIsCheckedOnLoad) {
  auto json = platforms::to_json(platforms::catalog_platform("m40-cluster"));
  json["nodes"]["cpu"]["kernel_efficiency"] = {{"conv", 1.5}, {"sources", {{"conv", "test"}}}};
  EXPECT_NE(error_of<InputError>([&] {
              platforms::parse_platform(json, "bad.json");
            }).find("/nodes/cpu/kernel_efficiency/conv"),
            std::string::npos);
  json["nodes"]["cpu"]["kernel_efficiency"] = {{"fft", 0.5}, {"sources", {{"fft", "test"}}}};
  EXPECT_THROW(platforms::parse_platform(json, "bad.json"), InputError);
  json["nodes"]["cpu"]["kernel_efficiency"] = {{"conv", 0.5}};  // no source
  EXPECT_THROW(platforms::parse_platform(json, "bad.json"), InputError);
  json["nodes"]["cpu"]["kernel_efficiency"] = {{"conv", 0.5}, {"sources", {{"conv", "test"}}}};
  const auto platform = platforms::parse_platform(json, "good.json");
  EXPECT_EQ(platform.nodes.cpu.efficiency.of("conv"), 0.5);
  EXPECT_EQ(platform.nodes.cpu.efficiency.of("gemm"), 1.0);
  // And it survives the writer.
  EXPECT_EQ(platforms::parse_platform(platforms::to_json(platform), "again.json").nodes.cpu.efficiency.of("conv"), 0.5);
}

}  // namespace
}  // namespace dsgd::simulate
