#include "platforms/starting_point.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"

namespace dsgd::platforms {
namespace {

// A platform's JSON without its name and sources: what a simulation reads.
Json numbers_of(const Platform& platform) {
  Json json = to_json(platform);
  json.erase("name");
  std::function<void(Json&)> strip = [&](Json& value) {
    if (value.is_object()) value.erase("sources");
    for (auto& member : value) {
      if (member.is_structured()) strip(member);
    }
  };
  strip(json);
  return json;
}

TEST(PlatformsStartingPoint, EveryCatalogPlatformGivesAFileThatLoadsAsIt) {
  for (const auto& name : catalog_names()) {
    const std::string text = starting_point(name, "my-" + name);
    const Platform mine = parse_platform_text(text, "my.json");
    EXPECT_EQ(mine.name, "my-" + name);
    EXPECT_EQ(numbers_of(mine), numbers_of(catalog_platform(name))) << name;
    EXPECT_NE(text.find("// peak in FLOP/s, not GFLOP/s or TFLOP/s"), std::string::npos) << name;
    // Every source is marked as the catalog machine's.
    EXPECT_EQ(mine.nodes.cpu.sources.at("clock_Hz").rfind("catalog " + name + ": ", 0), 0u) << name;
  }
}

TEST(PlatformsStartingPoint, RefusesALinkABadNameAndAnUnknownEntry) {
  EXPECT_THROW(starting_point(catalog_link_names().front(), "x"), InputError);
  EXPECT_THROW(starting_point("dgx-a100-ib", "my cluster"), InputError);
  EXPECT_THROW(starting_point("dgx-a100", "x"), UnknownNameError);
}

}  // namespace
}  // namespace dsgd::platforms
