// Results files (reports/results.hpp) from hostile text, and a table built from what they hold.
#include "core/json.hpp"
#include "reports/results.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsgd;
  return fuzz::expect_only_input_errors([&] {
    const Json json = parse_json(fuzz::text_of(data, size), "fuzz-results.json");
    const reports::Results results = reports::results_from_json(json, "fuzz-results.json");
    // Written back, it must read again: the writer and the reader agree on every value the reader accepted.
    reports::results_from_json(reports::to_json(results), "fuzz-results.json (written back)");
  });
}
