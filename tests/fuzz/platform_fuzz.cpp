// Platform files (platforms/loader.hpp): JSON syntax and the schema's checks, from hostile text.
#include "platforms/loader.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsgd;
  return fuzz::expect_only_input_errors(
      [&] { platforms::parse_platform_text(fuzz::text_of(data, size), "fuzz-platform.json"); });
}
