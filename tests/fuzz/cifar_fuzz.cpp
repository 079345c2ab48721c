// CIFAR-10 binary batches (core/data/cifar.hpp) from hostile bytes.
#include "core/data/binary_file.hpp"
#include "core/data/cifar.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsgd;
  return fuzz::expect_only_input_errors([&] {
    data::Dataset dataset;
    data::append_cifar10_records(dataset, data::decompress_if_gzip(fuzz::bytes_of(data, size), "fuzz.bin"), "fuzz.bin");
  });
}
