#pragma once
// A generated image-classification task in IDX files, for tests that train: 10 classes of 28 x 28 images (LeNet's
// input), class c a bright 7 x 5 block at one of ten places on noise. LeNet learns it in a few dozen iterations.

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/data/binary_file.hpp"
#include "core/data/idx.hpp"

namespace dsgd::testing {

// Pixels and labels as IDX files hold them.
struct ByteImages {
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint8_t> labels;
};

inline ByteImages make_images(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  ByteImages images;
  images.pixels.resize(count * 28 * 28);
  for (std::size_t i = 0; i < count; ++i) {
    const auto label = static_cast<std::uint8_t>(random() % 10);
    images.labels.push_back(label);
    std::uint8_t* image = images.pixels.data() + i * 28 * 28;
    for (std::size_t p = 0; p < 28 * 28; ++p) image[p] = static_cast<std::uint8_t>(random() % 64);
    const std::size_t top = 3 + (label / 5) * 14;
    const std::size_t left = 1 + (label % 5) * 5;
    for (std::size_t y = top; y < top + 7; ++y) {
      for (std::size_t x = left; x < left + 5; ++x) image[y * 28 + x] = static_cast<std::uint8_t>(192 + random() % 64);
    }
  }
  return images;
}

inline void write_idx(const std::filesystem::path& folder, const std::string& prefix, const ByteImages& images) {
  data::IdxImages idx;
  idx.count = images.labels.size();
  idx.rows = 28;
  idx.cols = 28;
  idx.pixels = images.pixels;
  data::write_binary_file(folder / (prefix + "-images-idx3-ubyte"), data::encode_idx_images(idx));
  data::write_binary_file(folder / (prefix + "-labels-idx1-ubyte"), data::encode_idx_labels(images.labels));
}

// Writes a training set of `train` and a test set of `test` images into `folder`: load it as "idx:FOLDER".
inline void write_synthetic_idx_folder(const std::filesystem::path& folder, std::size_t train, std::size_t test) {
  write_idx(folder, "train", make_images(train, 1));
  write_idx(folder, "t10k", make_images(test, 2));
}

}  // namespace dsgd::testing
