// Report manifests (reports/manifest.hpp) from hostile text.
#include "core/json.hpp"
#include "reports/manifest.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsgd;
  return fuzz::expect_only_input_errors([&] {
    const Json json = parse_json(fuzz::text_of(data, size), "fuzz-manifest.json");
    reports::parse_manifest(json, "fuzz-manifest.json");
  });
}
