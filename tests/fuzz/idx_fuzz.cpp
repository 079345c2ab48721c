// IDX image and label files (core/data/idx.hpp), gzip or plain, from hostile bytes.
#include "core/data/binary_file.hpp"
#include "core/data/idx.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsgd;
  return fuzz::expect_only_input_errors([&] {
    const auto bytes = data::decompress_if_gzip(fuzz::bytes_of(data, size), "fuzz.idx");
    try {
      data::parse_idx_images(bytes, "fuzz.idx");
    } catch (const InputError&) {
    }
    data::parse_idx_labels(bytes, "fuzz.idx");
  });
}
