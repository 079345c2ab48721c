// algorithms/wfbp_sgd.cpp and algorithms/gradient_buckets.hpp: buckets fused from the last layer up to the cap;
// wfbp-sgd's weights are sync-sgd's (bit for bit with one bucket, to rounding with one bucket per layer); in
// simulation its buckets overlap the backward pass -- shorter iterations and less exposed communication than
// sync-sgd's for VGG-16 on the M40 cluster, the same time as sync-sgd where the network is infinitely fast, and the
// exposed time of the pipelined closed form (simulate/collective_costs.hpp) on a flat alpha-beta star. The
// catalog-wide tests (algorithms_test.cpp) hold it bit-identical across threads, MPI and SimGrid.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "algorithms/gradient_buckets.hpp"
#include "algorithms/runner.hpp"
#include "algorithms/trainer.hpp"
#include "app/run_common.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "simulate/collective_costs.hpp"
#include "simulate/compute_cost.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "simulate/weak_scaling.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::algorithms {
namespace {

constexpr std::size_t kFloat = sizeof(float);

// The packed layout of a model's layers, as a size-only Trainer makes it.
std::vector<nn::ParameterSlice> layout_of(const ModelSpec& model) {
  std::vector<nn::ParameterSlice> layout;
  std::size_t offset = 0;
  for (const auto& layer : model.layers) {
    layout.push_back({layer.name, offset, static_cast<std::size_t>(layer.parameters)});
    offset += layout.back().count;
  }
  return layout;
}

TEST(GradientBuckets, FuseFromTheLastLayerUntilTheCapIsReached) {
  // a(100) relu(0) b(50) pool(0) d(300) e(10), in floats.
  const std::vector<nn::ParameterSlice> layout = {{"a", 0, 100},    {"relu", 100, 0}, {"b", 100, 50},
                                                  {"pool", 150, 0}, {"d", 150, 300},  {"e", 450, 10}};
  const auto buckets = make_buckets(layout, 200 * kFloat);
  ASSERT_EQ(buckets.size(), 2U);
  // e (40 bytes) is under the cap, e + d (1240 bytes) over it: the first bucket closes after d.
  EXPECT_EQ(buckets[0].first_layer, 4U);
  EXPECT_EQ(buckets[0].last_layer, 5U);
  EXPECT_EQ(buckets[0].offset, 150U);
  EXPECT_EQ(buckets[0].count, 310U);
  // b and a never reach the cap: the layers run out.
  EXPECT_EQ(buckets[1].first_layer, 0U);
  EXPECT_EQ(buckets[1].last_layer, 2U);
  EXPECT_EQ(buckets[1].offset, 0U);
  EXPECT_EQ(buckets[1].count, 150U);

  const auto per_layer = make_buckets(layout, 0);
  ASSERT_EQ(per_layer.size(), 4U);
  const std::size_t layers[] = {5, 4, 2, 0};
  for (std::size_t k = 0; k < per_layer.size(); ++k) {
    EXPECT_EQ(per_layer[k].first_layer, layers[k]);
    EXPECT_EQ(per_layer[k].last_layer, layers[k]);
    EXPECT_EQ(per_layer[k].count, layout[layers[k]].count);
  }
  const auto one = make_buckets(layout, 1 << 30);
  ASSERT_EQ(one.size(), 1U);
  EXPECT_EQ(one[0].offset, 0U);
  EXPECT_EQ(one[0].count, 460U);
  EXPECT_TRUE(make_buckets({}, 100).empty());
}

TEST(GradientBuckets, Vgg16InDdpsDefaultBuckets) {
  const ModelSpec model = build_model("vgg16");
  const std::vector<nn::ParameterSlice> layout = layout_of(model);
  const std::size_t offset = static_cast<std::size_t>(model.parameters());
  const std::size_t cap = 25 * 1024 * 1024;
  const auto buckets = make_buckets(layout, cap);
  ASSERT_GE(buckets.size(), 3U);
  std::size_t end = offset;
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    const GradientBucket& bucket = buckets[k];
    EXPECT_EQ(bucket.offset + bucket.count, end) << "bucket " << k << " does not end where the one before began";
    end = bucket.offset;
    // Each bucket but the last closed at the layer that took it past the cap.
    const std::size_t first_bytes = layout[bucket.first_layer].count * kFloat;
    if (k + 1 < buckets.size()) {
      EXPECT_GE(bucket.bytes(), cap) << k;
      EXPECT_LT(bucket.bytes() - first_bytes, cap) << k;
    } else {
      EXPECT_LT(bucket.bytes() - first_bytes, cap) << k;
    }
  }
  EXPECT_EQ(end, 0U);
  std::printf("vgg16 in 25 MiB buckets:");
  for (const auto& bucket : buckets) std::printf(" %.1f MB", static_cast<double>(bucket.bytes()) / 1e6);
  std::printf("\n");
}

simulate::ScalingOptions size_only(const std::string& algorithm, std::vector<int> workers, int batch) {
  simulate::ScalingOptions options;
  options.algorithm = algorithm;
  options.model = "vgg16";
  options.hyper.batch = batch;
  options.workers = std::move(workers);
  options.iterations = 2;
  options.fidelity = simulate::Fidelity::kMessage;
  return options;
}

class WfbpSgd : public testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    testing::write_synthetic_idx_folder(dir_, 960, 200);
    cli_.dataset = "idx:" + dir_.string();
    cli_.run.workers = 3;
    cli_.run.hyper.batch = 16;
    cli_.run.hyper.momentum = 0.5F;
    data_ = app::load_run_data(cli_);
  }

  // Rank 0's weights after `iterations` of `algorithm` on 3 threads.
  std::vector<float> weights(const std::string& algorithm, std::size_t bucket_bytes, std::int64_t iterations) {
    const AlgorithmEntry& entry = find_algorithm(algorithm);
    Hyperparameters hyper = cli_.run.hyper;
    hyper.bucket_bytes = bucket_bytes;
    TrainerSetup setup;
    setup.model = std::make_shared<const ModelSpec>(build_model(cli_.run.model));
    setup.train = data_.train;
    std::vector<float> out;
    WorldOptions world;
    world.size = cli_.run.workers;
    measure::threads::run(world, [&](Comm& comm) {
      Trainer trainer(comm, entry.info, hyper, setup);
      const auto instance = entry.make(trainer);
      instance->run_round(trainer, iterations);
      if (comm.rank() == 0) {
        out.assign(trainer.parameters(), trainer.parameters() + trainer.parameter_count());
        bytes_sent_ = comm.bytes_sent();
      }
    });
    return out;
  }

  std::uint64_t bytes_sent_ = 0;  // rank 0's, in the last weights() run
  app::RunCli cli_;
  RunData data_;
};

TEST_F(WfbpSgd, OneBucketIsSyncSgdBitForBitAndOnePerLayerToRounding) {
  const auto sync = weights("sync-sgd", 0, 20);
  const std::uint64_t sync_bytes = bytes_sent_;
  EXPECT_TRUE(weights("wfbp-sgd", 1 << 30, 20) == sync) << "one bucket sums each element in sync-sgd's order";
  EXPECT_EQ(bytes_sent_, sync_bytes) << "the stream's messages count as the rank's bytes on the wire";
  EXPECT_GT(sync_bytes, 0U);
  const auto per_layer = weights("wfbp-sgd", 0, 20);
  ASSERT_EQ(per_layer.size(), sync.size());
  double largest = 0;
  double difference = 0;
  for (std::size_t i = 0; i < sync.size(); ++i) {
    largest = std::max(largest, std::fabs(static_cast<double>(sync[i])));
    difference = std::max(difference, std::fabs(static_cast<double>(per_layer[i]) - sync[i]));
  }
  std::printf("per-layer buckets against sync-sgd after 20 iterations: largest difference %.3g (largest weight %.3g)\n",
              difference, largest);
  EXPECT_LE(difference, 1e-5 * largest) << "more than rounding apart";
}

// --first-bucket-bytes, an option wfbp_sgd.cpp declares and reads alone: a small first bucket is another bucketing
// of the same sums (to rounding), and on ResNet-50 at 64 P100s it starts the first allreduce early enough to hide
// more of the exchange.
TEST_F(WfbpSgd, ASmallFirstBucketSumsTheSameGradientsAndStartsEarlier) {
  const auto one_bucket = weights("wfbp-sgd", 1 << 30, 10);
  cli_.run.hyper.own["first-bucket-bytes"] = 4096;
  const auto small_first = weights("wfbp-sgd", 1 << 30, 10);
  ASSERT_EQ(small_first.size(), one_bucket.size());
  EXPECT_FALSE(small_first == one_bucket) << "two buckets, two rings: another order of summation";
  for (std::size_t i = 0; i < one_bucket.size(); ++i) {
    ASSERT_NEAR(small_first[i], one_bucket[i], 1e-5 + 1e-5 * std::fabs(one_bucket[i])) << i;
  }
  cli_.run.hyper.own["first-bucket-bytes"] = 0.5;
  EXPECT_THROW(weights("wfbp-sgd", 1 << 30, 1), InputError) << "a whole number of bytes";

  const auto platform = platforms::load_platform("p100-roce-25g");
  auto options = size_only("wfbp-sgd", {64}, 32);
  options.model = "resnet50";
  const auto plain = simulate::simulate_weak_scaling(platform, options).front();
  options.hyper.own["first-bucket-bytes"] = 1 << 20;
  const auto early = simulate::simulate_weak_scaling(platform, options).front();
  std::printf("resnet50, 64 P100s: exposed %.4f s with 25 MiB buckets, %.4f s with a 1 MiB first one\n",
              plain.exposed_comm_s_per_iteration, early.exposed_comm_s_per_iteration);
  EXPECT_LT(early.exposed_comm_s_per_iteration, plain.exposed_comm_s_per_iteration);
}

TEST(AlgorithmOptions, DefaultsRangesAndOwnersAreTheDeclaringFilesOnly) {
  const auto& wfbp = find_algorithm("wfbp-sgd").info;
  EXPECT_EQ(resolve_options(wfbp, {}).at("first-bucket-bytes"), 0);
  EXPECT_EQ(resolve_options(wfbp, {{"first-bucket-bytes", 1048576}}).at("first-bucket-bytes"), 1048576);
  EXPECT_THROW(resolve_options(wfbp, {{"first-bucket-bytes", -1}}), InputError);
  try {
    resolve_options(find_algorithm("sync-sgd").info, {{"first-bucket-bytes", 1}});
    FAIL() << "sync-sgd accepted wfbp-sgd's option";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "--first-bucket-bytes is not an option of sync-sgd; it is wfbp-sgd's");
  }
}

TEST_F(WfbpSgd, AnyPeriodButOneIsRefused) {
  auto cli = cli_;
  cli.run.algorithm = "wfbp-sgd";
  cli.run.hyper.period = 2;
  cli.run.budget.iterations = 4;
  cli.run.budget.eval_every = 2;
  RunResult result;
  WorldOptions world;
  world.size = 2;
  try {
    measure::threads::run(world, training_worker(cli.run, data_, &result));
    FAIL() << "accepted --period 2";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "wfbp-sgd overlaps every iteration's gradient allreduce with its backward pass: --period 2 must be 1");
  }
}

TEST(WfbpSgdSimulated, Vgg16OnTheM40ClusterHidesCommunicationUnderTheBackwardPass) {
  const auto platform = platforms::load_platform("m40-cluster");
  const auto sync = simulate::simulate_weak_scaling(platform, size_only("sync-sgd", {8}, 32)).front();
  const auto wfbp = simulate::simulate_weak_scaling(platform, size_only("wfbp-sgd", {8}, 32)).front();
  std::printf(
      "vgg16, 8 M40s: sync-sgd %.4f s/iteration (exposed %.4f s), wfbp-sgd %.4f s/iteration (exposed %.4f s, "
      "overlapped %.4f s)\n",
      sync.seconds_per_iteration, sync.exposed_comm_s_per_iteration, wfbp.seconds_per_iteration,
      wfbp.exposed_comm_s_per_iteration, wfbp.overlapped_comm_s_per_iteration);
  EXPECT_LT(wfbp.seconds_per_iteration, sync.seconds_per_iteration);
  EXPECT_LT(wfbp.exposed_comm_s_per_iteration, sync.exposed_comm_s_per_iteration);
  EXPECT_GT(wfbp.overlapped_comm_s_per_iteration, 0);
  EXPECT_EQ(sync.overlapped_comm_s_per_iteration, 0);
  // Hidden is not free: the iteration still holds the whole compute of sync-sgd's (same for/backward).
  EXPECT_NEAR(wfbp.per_rank[0][Category::kForwardBackward], sync.per_rank[0][Category::kForwardBackward],
              1e-3 * sync.per_rank[0][Category::kForwardBackward]);
}

TEST(WfbpSgdSimulated, WithAnInfinitelyFastNetworkBothTakeTheComputeTime) {
  // Latency 0 and 1e18 B/s: what is left is arithmetic -- forward and backward (3 x forward FLOPs), the ring's
  // reductions ((P-1)/P per float), the average (1) and the update (4 per float) -- at the host's peak, for both.
  const int ranks = 4;
  const double peak = 1e12;
  const int batch = 4;
  const auto platform = simulate::flat_platform(ranks, 0, 1e18, peak);
  const auto sync = simulate::simulate_weak_scaling(platform, size_only("sync-sgd", {ranks}, batch)).front();
  const auto wfbp = simulate::simulate_weak_scaling(platform, size_only("wfbp-sgd", {ranks}, batch)).front();
  const ModelSpec model = build_model("vgg16");
  const double n = static_cast<double>(model.parameters());
  const double compute_s = (3 * model.forward_flops() * batch + (5 + (ranks - 1.0) / ranks) * n) / peak;
  std::printf("infinitely fast network: compute %.6f s, sync-sgd %.6f s, wfbp-sgd %.6f s per iteration\n", compute_s,
              sync.seconds_per_iteration, wfbp.seconds_per_iteration);
  EXPECT_NEAR(sync.seconds_per_iteration, compute_s, 1e-4 * compute_s);
  EXPECT_NEAR(wfbp.seconds_per_iteration, compute_s, 1e-4 * compute_s);
}

TEST(WfbpSgdSimulated, ExposedTimeIsThePipelinedClosedFormOnAFlatStar) {
  // 4 ranks, 10 us and 10 GB/s, 1 TFLOP/s, VGG-16 at batch 1: the fully connected layers' buckets are ready first
  // and their 80 ms of ring overlap the convolutions' 60 ms of backward pass, so some but not all is exposed.
  const int ranks = 4;
  const auto platform = simulate::flat_platform(ranks, 1e-5, 1e10, 1e12);
  for (const std::size_t bucket_bytes : {std::size_t{0}, std::size_t{25} << 20}) {
    auto options = size_only("wfbp-sgd", {ranks}, 1);
    options.hyper.bucket_bytes = bucket_bytes;
    const auto point = simulate::simulate_weak_scaling(platform, options).front();

    const ModelSpec model = build_model("vgg16");
    const std::vector<nn::ParameterSlice> layout = layout_of(model);
    const auto site = simulate::place_ranks(platform, ranks, {}).front();
    const auto abg = simulate::alpha_beta_gamma(platform);
    // Each layer's backward step (the final softmax is the loss: its cost goes with the forward step).
    std::vector<double> layer_s(model.layers.size() - 1);
    for (std::size_t l = 0; l < layer_s.size(); ++l) {
      ComputeStep step;
      step.flops = 2.0 * model.layers[l].forward_flops;
      step.kernel_class = "conv";
      layer_s[l] = simulate::compute_seconds(site, step);
    }
    // A bucket is ready once the backward pass has gone down to its first layer.
    std::vector<double> ready_s;
    std::vector<double> cost_s;
    for (const GradientBucket& bucket : make_buckets(layout, bucket_bytes)) {
      double ready = 0;
      for (std::size_t l = bucket.first_layer; l < layer_s.size(); ++l) ready += layer_s[l];
      ready_s.push_back(ready);
      cost_s.push_back(simulate::allreduce_time(abg, AllreduceAlgorithm::kRing, ranks, bucket.count));
    }
    const double expected = simulate::pipelined_exposed_s(ready_s, cost_s);
    double total_s = 0;
    for (const double cost : cost_s) total_s += cost;
    std::printf("bucket bytes %zu: %zu buckets, exposed %.6f s simulated, %.6f s closed form (of %.6f s of ring)\n",
                bucket_bytes, cost_s.size(), point.exposed_comm_s_per_iteration, expected, total_s);
    EXPECT_GT(expected, 0.01 * total_s) << "the case should leave some communication exposed";
    EXPECT_LT(expected, 0.9 * total_s) << "the case should hide some communication";
    EXPECT_NEAR(point.exposed_comm_s_per_iteration, expected, 0.01 * expected);
    EXPECT_NEAR(point.overlapped_comm_s_per_iteration, total_s - expected, 0.01 * total_s);
  }
}

TEST(PipelinedExposedTime, FollowsTheRecurrence) {
  // Ready at 1, 2, 3; costs 0.5, 2, 0.5: ends 1.5, 4, 4.5 -> 1.5 after the last is ready.
  EXPECT_DOUBLE_EQ(simulate::pipelined_exposed_s(std::vector<double>{1, 2, 3}, std::vector<double>{0.5, 2, 0.5}), 1.5);
  // Everything hidden but the last collective.
  EXPECT_DOUBLE_EQ(simulate::pipelined_exposed_s(std::vector<double>{1, 2, 3}, std::vector<double>{0.5, 0.5, 0.25}),
                   0.25);
  EXPECT_EQ(simulate::pipelined_exposed_s({}, {}), 0.0);
  EXPECT_THROW(simulate::pipelined_exposed_s(std::vector<double>{1}, {}), InputError);
}

}  // namespace
}  // namespace dsgd::algorithms
