// algorithms/geeps/geeps.cpp: GeePS. Its maths is synchronous SGD's (one worker: sync-sgd's weights bit for bit);
// swapping its buffers through a device smaller than they need moves real bytes but leaves the weights unchanged
// (threads and SimGrid with payloads); a device too small for one step is refused by name; in simulation on a GPU
// cluster the swaps cost at least their stalls and less than all their copies in series (the rest overlaps the
// layers' compute), and servers may sit on nodes that hold no worker. The catalog-wide tests (algorithms_test.cpp,
// parameter_server_test.cpp, checkpoint_test.cpp) hold it bit-identical across threads, MPI and SimGrid, with any
// number of servers, and through checkpoints.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "algorithms/geeps/memory_plan.hpp"
#include "core/nn/backend.hpp"
#include "platforms/catalog.hpp"
#include "simulate/compute_cost.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "simulate/weak_scaling.hpp"
#include "tests/algorithms/training_runs.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::algorithms {
namespace {

using testing::hex;
using Geeps = testing::TrainingRuns;

// geeps on one GPU of k80-cluster (its server on node 0's CPU, or `servers` of them), AlexNet, message level.
simulate::ScalingOptions alexnet_on_one_k80(std::int64_t iterations, int servers = 1) {
  simulate::ScalingOptions options;
  options.algorithm = "geeps";
  options.model = "alexnet";
  options.hyper.servers = servers;
  options.workers = {1};
  options.iterations = iterations;
  options.fidelity = simulate::Fidelity::kMessage;
  return options;
}

TEST_F(Geeps, OneWorkerTrainsAsSyncSgdBitForBit) {
  auto geeps = with("geeps");
  auto sync = with("sync-sgd");
  geeps.run.workers = sync.run.workers = 1;
  EXPECT_EQ(hex(run_threads(geeps).parameters_hash), hex(run_threads(sync).parameters_hash));
}

TEST_F(Geeps, SwappingThroughASmallDeviceMovesBytesButNotTheWeights) {
  auto cli = with("geeps");
  cli.run.hyper.servers = 2;
  const RunResult resident = run_threads(cli);
  const auto pattern = geeps::virtual_iteration(build_model(cli.run.model), cli.run.hyper.batch);
  const std::uint64_t half = geeps::buffer_bytes(pattern) / 2;
  const auto plan = geeps::plan_memory(pattern, half);
  ASSERT_FALSE(plan.fits);
  cli.run.hyper.device_memory_bytes = half;
  const RunResult swapped = run_threads(cli);
  EXPECT_EQ(hex(swapped.parameters_hash), hex(resident.parameters_hash));
  EXPECT_EQ(resident.counters.at("geeps_swapped_bytes"), 0);
  // Every worker's every iteration moves the plan's bytes.
  const double iterations = static_cast<double>(cli.run.workers * cli.run.budget.iterations);
  EXPECT_EQ(swapped.counters.at("geeps_swapped_bytes"),
            iterations * static_cast<double>(plan.to_device_bytes + plan.to_host_bytes));
  EXPECT_EQ(run_simgrid(cli, /*payload=*/true), hex(resident.parameters_hash));
}

TEST_F(Geeps, RefusesADeviceTooSmallForOneStep) {
  auto cli = with("geeps");
  cli.run.hyper.device_memory_bytes = 1000;
  const std::string message = dsgd::testing::input_error([&] { run_threads(cli); });
  EXPECT_NE(message.find("needs"), std::string::npos) << message;
  EXPECT_NE(message.find("1000"), std::string::npos) << message;
}

// On a GPU the swaps go through the CUDA swap area (pinned host memory and a stream of their own) while the layers
// compute: the same weights as without swaps, their bytes moved and their time charged. Skipped without a device.
TEST_F(Geeps, SwapsOnACudaDeviceKeepTheWeights) {
  if (nn::backend_device_count("cuda") == 0) GTEST_SKIP() << "no CUDA device here (no GPU or no NVIDIA driver)";
  auto cli = with("geeps");
  cli.run.backend = "cuda";
  const RunResult resident = run_threads(cli);
  const auto pattern = geeps::virtual_iteration(build_model(cli.run.model), cli.run.hyper.batch);
  cli.run.hyper.device_memory_bytes = geeps::buffer_bytes(pattern) / 2;
  const RunResult swapped = run_threads(cli);
  EXPECT_EQ(hex(swapped.parameters_hash), hex(resident.parameters_hash));
  EXPECT_GT(swapped.counters.at("geeps_swapped_bytes"), 0);
  const auto data_s = [](const RunResult& result) {
    double total = 0;
    for (const auto& rank : result.per_rank) total += rank[Category::kCpuGpuData];
    return total;
  };
  EXPECT_GT(data_s(swapped), data_s(resident));
  auto backend = nn::make_backend("cuda", {});
  auto area = backend->make_swap_area(std::size_t{8} << 20);
  EXPECT_EQ(area->bytes(), std::size_t{8} << 20);
  area->to_device(area->bytes());
  area->to_host(area->bytes());
  EXPECT_THROW(area->to_device(area->bytes() + 1), InternalError);
}

// AlexNet at batch 64, one K80 GPU and its host's server: with half its buffers' bytes of device memory an iteration
// takes longer than with all of them by at least the copies it waits for and by less than all its copies in series.
TEST(GeepsSimulated, SwapsCostTheirStallsAndOverlapTheRest) {
  const auto platform = platforms::load_platform("k80-cluster");
  simulate::ScalingOptions options = alexnet_on_one_k80(3);
  options.hyper.batch = 64;
  options.hyper.device_memory_bytes = std::uint64_t{1} << 40;
  const auto resident = simulate::simulate_weak_scaling(platform, options).front();
  const auto pattern = geeps::virtual_iteration(build_model("alexnet"), 64);
  const std::uint64_t half = geeps::buffer_bytes(pattern) / 2;
  const auto plan = geeps::plan_memory(pattern, half);
  ASSERT_FALSE(plan.fits);
  options.hyper.device_memory_bytes = half;
  const auto swapping = simulate::simulate_weak_scaling(platform, options).front();

  simulate::PlacementOptions placement;
  placement.master_on_host = true;
  const simulate::RankSite worker = simulate::place_ranks(platform, 2, placement).back();
  const double copy_Bps = worker.copy_bandwidth_Bps * worker.efficiency.of("copy");
  std::uint64_t stalled = 0;
  for (const auto& step : plan.steps) stalled += step.stalled_bytes;
  const double stalls_s = static_cast<double>(stalled) / copy_Bps;
  const double copies_s = static_cast<double>(plan.to_device_bytes + plan.to_host_bytes) / copy_Bps;
  const double added_s = swapping.seconds_per_iteration - resident.seconds_per_iteration;
  std::printf(
      "alexnet, 1 K80: %.1f ms per iteration resident, %.1f ms with half the memory; stalls %.1f ms, all "
      "copies %.1f ms\n",
      1e3 * resident.seconds_per_iteration, 1e3 * swapping.seconds_per_iteration, 1e3 * stalls_s, 1e3 * copies_s);
  EXPECT_GE(added_s, 0.999 * stalls_s);
  EXPECT_LT(added_s, copies_s);
  // The copies are charged to the worker's cpu-gpu data.
  const auto data_s = [](const simulate::ScalingPoint& point) { return point.per_rank.back()[Category::kCpuGpuData]; };
  EXPECT_GT(data_s(swapping), data_s(resident) + 0.999 * stalls_s * static_cast<double>(options.iterations));
}

// GeePS's one server per machine where fewer machines hold workers: one GPU of node 0 and servers on the CPUs of
// nodes 0..3 (the platform used to be built with only the workers' nodes, and placing the servers crashed).
TEST(GeepsSimulated, ServersOnNodesWithoutWorkers) {
  const auto point =
      simulate::simulate_weak_scaling(platforms::load_platform("k80-cluster"), alexnet_on_one_k80(2, 4)).front();
  EXPECT_EQ(point.ranks, 5);
  EXPECT_GT(point.seconds_per_iteration, 0);
}

}  // namespace
}  // namespace dsgd::algorithms
