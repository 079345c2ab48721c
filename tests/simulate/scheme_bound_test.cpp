// simulate/scheme_bound: the closed-form lower bound of a communication scheme, term by term against the platforms'
// numbers: an allreduce's 2 S (N-1)/N over a node's NICs, a sharded server's G times that, fp16's half, one node's
// GPU links, and the flat ring's and the hierarchical allreduce's own patterns.
#include "simulate/scheme_bound.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "platforms/catalog.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {
namespace {

const ModelSpec& resnet50() {
  static const ModelSpec model = build_model("resnet50");
  return model;
}

double gradient_bytes() { return 4.0 * static_cast<double>(resnet50().parameters()); }

TEST(SchemeBound, AnAllreduceAcrossNodesMovesTwiceTheGradientOverEachNodesNics) {
  const auto platform = platforms::catalog_platform("dgx1-ib");
  ASSERT_TRUE(platform.nodes.nics);
  const double nics_Bps =
      platform.nodes.nics->count * platform.nodes.nics->bandwidth_Bps.value_or(platform.network.link.bandwidth_Bps);
  const auto bound = scheme_bound(platform, resnet50(), "sync-sgd", {}, 64, 8, 0.1);
  EXPECT_NEAR(bound.link_s, 2 * gradient_bytes() * 7 / 8 / nics_Bps, 1e-12);
  EXPECT_EQ(bound.seconds(), std::max(0.1, bound.link_s));
  algorithms::Hyperparameters fp16;
  fp16.compression = Compression::kFp16;
  EXPECT_NEAR(scheme_bound(platform, resnet50(), "sync-sgd", fp16, 64, 8, 0.1).link_s, bound.link_s / 2, 1e-12);
  algorithms::Hyperparameters sharded;
  sharded.servers = 8;
  EXPECT_NEAR(scheme_bound(platform, resnet50(), "async-sgd", sharded, 64, 8, 0.1).link_s, 8 * bound.link_s, 1e-12)
      << "a server's node carries its 8 workers' pushes and its shard's replies";
}

TEST(SchemeBound, InsideOneNodeEachGpuUsesItsFastestLinks) {
  const auto platform = platforms::catalog_platform("p100-roce-25g");
  const double pcie_Bps = device_link_Bps(platform, 0);
  ASSERT_GT(pcie_Bps, 0);
  const auto bound = scheme_bound(platform, resnet50(), "sync-sgd", {}, 4, 1, 0.1);
  EXPECT_NEAR(bound.link_s, 2 * gradient_bytes() * 3 / 4 / pcie_Bps, 1e-12);
  EXPECT_EQ(scheme_bound(platform, resnet50(), "sync-sgd", {}, 1, 1, 0.1).link_s, 0) << "one GPU: no exchange";
  algorithms::Hyperparameters server;
  server.servers = 1;
  EXPECT_NEAR(scheme_bound(platform, resnet50(), "async-sgd", server, 1, 1, 0.1).link_s, gradient_bytes() / pcie_Bps,
              1e-12)
      << "a shard on the host is across the GPU's PCIe link even for one GPU";
}

TEST(SchemeBound, TheFlatRingAndTheHierarchicalAllreduceMoveMoreThanTheBound) {
  const auto platform = platforms::catalog_platform("p100-roce-25g");
  const double nic_Bps = platform.network.link.bandwidth_Bps;
  const auto ring = scheme_bound(platform, resnet50(), "sync-sgd", {}, 8, 2, 0.1);
  EXPECT_NEAR(ring.link_s, gradient_bytes() / nic_Bps, 1e-12) << "2 S (N-1)/N with N = 2";
  EXPECT_NEAR(ring.pattern_s, 2 * gradient_bytes() * 7 / 8 / nic_Bps, 1e-12) << "one ring edge leaves each node";
  algorithms::Hyperparameters hierarchical;
  hierarchical.allreduce = AllreduceAlgorithm::kHierarchical;
  const auto tree = scheme_bound(platform, resnet50(), "sync-sgd", hierarchical, 8, 2, 0.1);
  EXPECT_NEAR(tree.pattern_s, 2 * 2 * gradient_bytes() / device_link_Bps(platform, 0) + tree.link_s, 1e-12)
      << "log2(4) = 2 binomial steps each way inside the node, then the ring among the nodes";
  algorithms::Hyperparameters two_d;
  two_d.allreduce = AllreduceAlgorithm::kHierarchical2d;
  EXPECT_EQ(scheme_bound(platform, resnet50(), "sync-sgd", two_d, 8, 2, 0.1).pattern_s, 0)
      << "the 2-D allreduce moves what the bound says";
}

TEST(SchemeBound, RefusesAnEmptyWorld) {
  const auto platform = platforms::catalog_platform("dgx1-ib");
  EXPECT_THROW(scheme_bound(platform, resnet50(), "sync-sgd", {}, 0, 1, 0.1), InputError);
  EXPECT_THROW(scheme_bound(platform, resnet50(), "sync-sgd", {}, 8, 0, 0.1), InputError);
}

}  // namespace
}  // namespace dsgd::simulate
