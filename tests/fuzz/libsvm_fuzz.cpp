// LIBSVM text (core/data/libsvm.hpp), with and without a declared dimension, from hostile bytes.
#include "core/data/libsvm.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsgd;
  return fuzz::expect_only_input_errors([&] {
    try {
      data::parse_libsvm(fuzz::text_of(data, size), "fuzz.svm");
    } catch (const InputError&) {
    }
    data::parse_libsvm(fuzz::text_of(data, size), "fuzz.svm", {.features = 16});
  });
}
