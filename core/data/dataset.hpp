#pragma once
// An image-classification dataset in memory, normalisation (seed 000 Algorithm 1 line 1: mean 0, variance 1) and
// copying a batch of samples into the contiguous buffers the nn back ends take.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/huge_pages.hpp"

namespace dsgd::data {

// N images of C x H x W float32 pixels and their class labels.
struct Dataset {
  std::string name;  // where it came from, for messages and results ("fashion-mnist/train")
  int channels = 0;
  int height = 0;
  int width = 0;
  int classes = 0;  // labels are in 0 .. classes - 1
  // N x C x H x W, row-major (NCHW). Readers scale raw bytes to [0, 1]; normalize() then centres them.
  HugeFloats images;
  std::vector<std::int32_t> labels;  // N

  std::size_t size() const { return labels.size(); }
  // Floats per image: C x H x W.
  std::size_t image_size() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  }
  // The pixels of image `i`.
  std::span<const float> image(std::size_t i) const { return {images.data() + i * image_size(), image_size()}; }
  // The labels as floats holding integers, the form nn::Network::train_step takes.
  std::vector<float> float_labels() const;
  // Number of samples of each class (size `classes`).
  std::vector<std::size_t> class_counts() const;
};

// Per-channel statistics of a dataset's pixels (population variance, divided by the number of pixels).
struct ChannelStats {
  std::vector<double> mean;    // one per channel
  std::vector<double> stddev;  // one per channel
};

// Mean and standard deviation of every channel over all images and pixel positions of `data`.
// Throws InputError when `data` is empty.
ChannelStats channel_stats(const Dataset& data);

// pixel <- (pixel - mean[c]) / stddev[c] for every channel c. A channel with stddev 0 (constant) is only centred.
// Throws InputError when the statistics have a different number of channels than `data`.
void normalize(Dataset& data, const ChannelStats& stats);

// Seed 000 Algorithm 1 line 1 done the way that does not leak test data into training: statistics computed on
// `train` only, then applied to both `train` and `test`. Returns the statistics (for results' provenance).
// After it, train has per-channel mean ~0 and variance ~1; test is close but not exact.
ChannelStats normalize_with_train_stats(Dataset& train, Dataset& test);

// Copies the samples `indices` of `data` into contiguous buffers: `images` receives indices.size() x image_size()
// floats in index order, `labels` indices.size() floats holding class numbers. The spans must have exactly those
// sizes and each index must be < data.size() (InternalError otherwise: the caller's bug, not the user's input).
void fill_batch(const Dataset& data, std::span<const std::size_t> indices, std::span<float> images,
                std::span<float> labels);

}  // namespace dsgd::data
