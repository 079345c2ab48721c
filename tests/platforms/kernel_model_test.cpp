// The optional `kernels` object of a CPU or a device group (platforms/platform.hpp KernelModel): what the
// shape-aware kernel cost needs. It loads, survives a round trip, and each malformed case is one line naming the
// JSON path and what was expected.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::platforms {
namespace {

// p100-roce-25g with a `kernels` object on its device group (the numbers are this test's, with sources as the
// schema asks).
Json with_device_kernels(const Json& kernels) {
  Json json = to_json(catalog_platform("p100-roce-25g"));
  json["nodes"]["devices"][0]["kernels"] = kernels;
  return json;
}

Json p100_kernels() {
  return {{"parallel_units", 56},
          {"tile", {128, 64}},
          {"tiles", {{64, 64}, {128, 128}}},
          {"tile_k_overhead", 8},
          {"fixed_s", 5e-6},
          {"cache",
           {{"name", "l2"},
            {"size_bytes", 4194304},
            {"bandwidth_Bps", 1.5e12},
            {"sources", {{"size_bytes", "test"}, {"bandwidth_Bps", "test"}}}}},
          {"winograd_3x3", {2, 4}},
          {"efficiency", 0.8},
          {"sources",
           {{"parallel_units", "test"},
            {"winograd_3x3", "test"},
            {"tile", "test"},
            {"tiles", "test"},
            {"tile_k_overhead", "test"},
            {"fixed_s", "test"},
            {"efficiency", "test"}}}};
}

TEST(PlatformsKernelModel, LoadsAndRoundTrips) {
  const Platform platform = parse_platform(with_device_kernels(p100_kernels()), "p100.json");
  ASSERT_TRUE(platform.nodes.devices.at(0).kernels);
  const KernelModel& model = *platform.nodes.devices[0].kernels;
  EXPECT_EQ(model.parallel_units, 56);
  EXPECT_EQ(model.tile_m, 128);
  EXPECT_EQ(model.tile_n, 64);
  EXPECT_EQ(model.tiles, (std::vector<std::array<std::int64_t, 2>>{{64, 64}, {128, 128}}));
  EXPECT_DOUBLE_EQ(model.tile_k_overhead, 8);
  EXPECT_DOUBLE_EQ(model.fixed_s, 5e-6);
  EXPECT_DOUBLE_EQ(model.sync_s_per_unit, 0) << "absent: none";
  ASSERT_TRUE(model.cache);
  EXPECT_DOUBLE_EQ(*model.cache->size_bytes, 4194304);
  EXPECT_DOUBLE_EQ(model.efficiency, 0.8);
  EXPECT_EQ(model.winograd_3x3_tiles, (std::vector<std::int64_t>{2, 4}));
  const Json written = to_json(platform);
  EXPECT_EQ(to_json(parse_platform(written, "p100.json")), written);
  EXPECT_FALSE(written["nodes"]["devices"][0]["kernels"].contains("sync_s_per_unit")) << "absent stays absent";
  Json one_tile = p100_kernels();
  one_tile.erase("tiles");
  one_tile["sources"].erase("tiles");
  const Json one_tile_written = to_json(parse_platform(with_device_kernels(one_tile), "p100.json"));
  EXPECT_FALSE(one_tile_written["nodes"]["devices"][0]["kernels"].contains("tiles")) << "absent stays absent";
  EXPECT_FALSE(catalog_platform("p100-roce-25g").nodes.devices.at(0).kernels) << "optional";
}

TEST(PlatformsKernelModel, MalformedKernelsAreRefusedByPath) {
  const auto refused = [](const Json& kernels) {
    return dsgd::testing::input_error([&] { parse_platform(with_device_kernels(kernels), "p100.json"); });
  };
  Json kernels = p100_kernels();
  kernels["tile"] = {128, 64, 8};
  EXPECT_EQ(refused(kernels),
            "p100.json: /nodes/devices/0/kernels/tile: expected [m, n]: the output tile one unit computes at a time");
  kernels = p100_kernels();
  kernels["efficiency"] = 1.5;
  EXPECT_EQ(refused(kernels),
            "p100.json: /nodes/devices/0/kernels/efficiency: expected a fraction of peak in (0, 1], "
            "got 1.5");
  kernels = p100_kernels();
  kernels["cache"].erase("size_bytes");
  kernels["cache"]["sources"].erase("size_bytes");
  EXPECT_EQ(refused(kernels), "p100.json: /nodes/devices/0/kernels/cache: a cache needs its size_bytes");
  kernels = p100_kernels();
  kernels["sources"].erase("parallel_units");
  EXPECT_TRUE(
      refused(kernels).starts_with("p100.json: /nodes/devices/0/kernels/parallel_units: number without a "
                                   "source"));
  kernels = p100_kernels();
  kernels["winograd_3x3"] = {2, 7};
  EXPECT_EQ(refused(kernels),
            "p100.json: /nodes/devices/0/kernels/winograd_3x3/1: expected an output tile of at most 6 (F(6x6, 3x3)), "
            "got 7");
  kernels = p100_kernels();
  kernels["tiles"] = {{64, 64}, {128}};
  EXPECT_EQ(refused(kernels),
            "p100.json: /nodes/devices/0/kernels/tiles/1: expected [m, n]: an output tile the library can also "
            "choose");
  kernels["tiles"] = {{64, 64}, {128, 0}};
  EXPECT_TRUE(refused(kernels).starts_with("p100.json: /nodes/devices/0/kernels/tiles/1/1: expected a positive"));
  kernels = p100_kernels();
  kernels["sources"].erase("tiles");
  EXPECT_TRUE(refused(kernels).starts_with("p100.json: /nodes/devices/0/kernels/tiles: number without a source"))
      << "one source for the field";
  kernels = p100_kernels();
  kernels["threads"] = 4;
  EXPECT_NE(refused(kernels).find("threads"), std::string::npos);
}

// A CPU's libraries by layer kind: the measured streaming rates and the BLAS its GEMMs are called on.
TEST(PlatformsKernelModel, LibrariesByLayerKindLoadRoundTripAndNameTheirKinds) {
  Json kernels = p100_kernels();
  kernels["streaming"] = {
      {"relu", {{"forward_Bps", 7e10}, {"backward_Bps", 6e10}}},
      {"softmax",
       {{"forward_Bps", 2e9}, {"backward_Bps", 3e9}, {"fixed_s", 5e-8}, {"threaded", false}, {"per_image_s", 3e-9}}},
      {"max_pool",
       {{"forward_Bps", 2e10},
        {"backward_Bps", 5e10},
        {"parallel_efficiency", 0.8},
        {"channel_block", 16},
        {"padded_share", {0.3, 0.8}},
        {"tail_s", {1e-7, 2e-7}}}}};
  kernels["gemm_library"] = {
      {"inner_product", {{"one_thread_up_to", 262144}, {"packs_operands", true}, {"relative_efficiency", 0.55}}},
      {"convolution", {{"lowering_s", {3e-10, 5e-10, 4e-10}}}}};
  kernels["sources"]["streaming"] = "test";
  kernels["sources"]["gemm_library"] = "test";
  const Platform platform = parse_platform(with_device_kernels(kernels), "p100.json");
  const KernelModel& model = *platform.nodes.devices.at(0).kernels;
  EXPECT_EQ(model.streaming.at("relu"),
            (StreamingRate{.forward_Bps = 7e10, .backward_Bps = 6e10, .fixed_s = std::nullopt, .threaded = true}));
  EXPECT_EQ(model.streaming.at("softmax"),
            (StreamingRate{
                .forward_Bps = 2e9, .backward_Bps = 3e9, .fixed_s = 5e-8, .threaded = false, .per_image_s = 3e-9}));
  EXPECT_EQ(model.streaming.at("max_pool"), (StreamingRate{.forward_Bps = 2e10,
                                                           .backward_Bps = 5e10,
                                                           .parallel_efficiency = 0.8,
                                                           .channel_block = 16,
                                                           .forward_padded_share = 0.3,
                                                           .backward_padded_share = 0.8,
                                                           .forward_tail_s = 1e-7,
                                                           .backward_tail_s = 2e-7}));
  EXPECT_EQ(model.gemm_library.at("inner_product"),
            (GemmLibrary{.one_thread_up_to = 262144, .packs_operands = true, .relative_efficiency = 0.55}));
  EXPECT_EQ(model.gemm_library.at("convolution"),
            (GemmLibrary{
                .forward_lowering_s = 3e-10, .backward_data_lowering_s = 5e-10, .backward_weights_lowering_s = 4e-10}));
  const Json written = to_json(platform);
  EXPECT_EQ(to_json(parse_platform(written, "p100.json")), written);

  const auto refused = [](const Json& bad) {
    return dsgd::testing::input_error([&] { parse_platform(with_device_kernels(bad), "p100.json"); });
  };
  Json bad = kernels;
  bad["streaming"]["reluu"] = bad["streaming"]["relu"];
  EXPECT_NE(refused(bad).find("/nodes/devices/0/kernels/streaming/reluu: expected a layer kind (convolution, "),
            std::string::npos)
      << refused(bad);
  bad = kernels;
  bad["streaming"]["relu"]["forward_Bps"] = 0;
  EXPECT_NE(refused(bad).find("/streaming/relu/forward_Bps"), std::string::npos) << refused(bad);
  bad = kernels;
  bad["streaming"]["max_pool"]["padded_share"] = {0.3, 1.5};
  EXPECT_NE(refused(bad).find("/streaming/max_pool/padded_share/1: expected a share of the work in [0, 1]"),
            std::string::npos)
      << refused(bad);
  bad = kernels;
  bad["streaming"]["max_pool"].erase("channel_block");
  EXPECT_NE(refused(bad).find("a padded share needs the channel_block it pads to"), std::string::npos) << refused(bad);
  bad = kernels;
  bad["streaming"]["max_pool"]["tail_s"] = {1e-7};
  EXPECT_NE(refused(bad).find("/streaming/max_pool/tail_s: expected [forward, backward] seconds per image"),
            std::string::npos)
      << refused(bad);
  bad = kernels;
  bad["streaming"]["max_pool"]["parallel_efficiency"] = 1.5;
  EXPECT_NE(refused(bad).find("/streaming/max_pool/parallel_efficiency"), std::string::npos) << refused(bad);
  bad = kernels;
  bad["gemm_library"]["inner_product"]["threads"] = 2;
  EXPECT_NE(refused(bad).find("threads"), std::string::npos) << refused(bad);
  bad = kernels;
  bad["gemm_library"]["convolution"]["lowering_s"] = {3e-10, 5e-10};
  EXPECT_NE(refused(bad).find("/gemm_library/convolution/lowering_s: expected [forward, backward-data, "
                              "backward-weights] seconds per column element"),
            std::string::npos)
      << refused(bad);
  bad = kernels;
  bad["gemm_library"]["inner_product"]["lowering_s"] = {3e-10, 5e-10, 4e-10};
  EXPECT_NE(refused(bad).find("only a convolution is lowered"), std::string::npos) << refused(bad);
  bad = kernels;
  bad["gemm_library"]["inner_product"]["relative_efficiency"] = 0;
  EXPECT_NE(refused(bad).find("/gemm_library/inner_product/relative_efficiency"), std::string::npos) << refused(bad);
}

}  // namespace
}  // namespace dsgd::platforms
