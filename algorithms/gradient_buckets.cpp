#include "algorithms/gradient_buckets.hpp"

#include "core/error.hpp"

namespace dsgd::algorithms {

std::vector<GradientBucket> make_buckets(std::span<const nn::ParameterSlice> layout, std::size_t bucket_bytes) {
  std::vector<GradientBucket> buckets;
  bool open = false;
  for (std::size_t layer = layout.size(); layer-- > 0;) {
    const nn::ParameterSlice& slice = layout[layer];
    if (slice.count == 0) continue;
    if (!open) {
      buckets.push_back({layer, layer, slice.offset + slice.count, 0});
      open = true;
    }
    GradientBucket& bucket = buckets.back();
    DSGD_ENFORCE(slice.offset + slice.count == bucket.offset,
                 "layer '" + slice.layer + "' is not packed before the next");
    bucket.first_layer = layer;
    bucket.offset = slice.offset;
    bucket.count += slice.count;
    if (bucket.bytes() >= bucket_bytes) open = false;
  }
  return buckets;
}

}  // namespace dsgd::algorithms
