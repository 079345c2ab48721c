#pragma once
// Gradient buckets of wait-free backpropagation (algorithms/wfbp_sgd.cpp): the backward pass finishes layers from
// the last to the first, and the gradients of consecutive layers are fused into buckets, each reduced as soon as its
// last layer is done -- Horovod's tensor fusion, PyTorch DDP's gradient buckets (bucket_cap_mb). Layers are
// contiguous in the packed buffer, so a bucket is one contiguous range of it.

#include <cstddef>
#include <span>
#include <vector>

#include "core/nn/network.hpp"

namespace dsgd::algorithms {

struct GradientBucket {
  std::size_t first_layer = 0;  // the lowest layer with parameters in the bucket: done last, so the bucket is ready
  std::size_t last_layer = 0;   // the highest one
  std::size_t offset = 0;       // floats into the packed buffer
  std::size_t count = 0;        // floats
  std::size_t bytes() const { return count * sizeof(float); }
};

// The buckets of `layout` (a network's layers in order) in the order the backward pass readies them: layers with
// parameters are taken from the last, and a bucket closes as soon as it holds at least `bucket_bytes` (so a bucket
// exceeds the cap by less than its first layer's size, as DDP's do) or the layers run out. bucket_bytes = 0: one
// bucket per layer with parameters. Layers without parameters belong to no bucket.
std::vector<GradientBucket> make_buckets(std::span<const nn::ParameterSlice> layout, std::size_t bucket_bytes);

}  // namespace dsgd::algorithms
