// platforms/catalog_entries: the rows of `dsgd platforms` carry the catalog's numbers, a mesh or a PCIe tree named
// as the node has it, and a link's beta as the inverse of its bandwidth.

#include "platforms/catalog_entries.hpp"

#include <gtest/gtest.h>

namespace dsgd::platforms {
namespace {

TEST(PlatformsCatalogEntries, APlatformsRowCarriesItsSummary) {
  const Platform platform = catalog_platform("cori-knl");
  const PlatformSummary summary = summarize(platform);
  const auto entry = to_entry(platform);
  EXPECT_EQ(entry.executor, "catalog");
  EXPECT_EQ(entry.platform, "cori-knl");
  EXPECT_EQ(entry.labels.at("kind"), "platform");
  EXPECT_EQ(entry.labels.at("intra_node").rfind("2-D mesh", 0), 0U) << entry.labels.at("intra_node");
  EXPECT_EQ(entry.labels.at("topology").rfind(summary.topology, 0), 0U);
  EXPECT_DOUBLE_EQ(entry.counters.at("total_cores"), static_cast<double>(summary.total_cores));
  EXPECT_DOUBLE_EQ(entry.counters.at("peak_flops_per_node"), summary.peak_flops_per_node);
}

TEST(PlatformsCatalogEntries, AGpuNodeNamesItsLinksAndALinkItsBeta) {
  const auto dgx = to_entry(catalog_platform("dgx1-ib"));
  EXPECT_NE(dgx.labels.at("intra_node").find("NVLink"), std::string::npos) << dgx.labels.at("intra_node");
  for (const auto& name : catalog_link_names()) {
    const auto entry = to_entry(catalog_link(name));
    EXPECT_DOUBLE_EQ(entry.counters.at("beta_s_per_B") * entry.counters.at("bandwidth_Bps"), 1.0) << name;
  }
}

}  // namespace
}  // namespace dsgd::platforms
