#pragma once
// The IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/): a big-endian header -- magic
// 0x00000803 (unsigned bytes, 3 dimensions) for images, 0x00000801 for labels, then one 32-bit size per dimension --
// followed by the raw bytes. Files may be gzip-compressed (Debian's dataset-fashion-mnist ships them so).
// Every error is an InputError "FILE: offset N: ..." where N is the byte offset in the decompressed file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/data/dataset.hpp"

namespace dsgd::data {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;

// The contents of an IDX image file (idx3-ubyte): count images of rows x cols bytes, row-major.
struct IdxImages {
  std::size_t count = 0;
  int rows = 0;
  int cols = 0;
  std::vector<std::uint8_t> pixels;  // count x rows x cols
};

// Reads an idx3-ubyte image file (plain or gzip). Throws InputError naming the file and offset when it is missing,
// truncated, has trailing bytes, holds no images, or its magic is not 0x00000803.
IdxImages read_idx_images(const std::filesystem::path& path);

// Reads an idx1-ubyte label file (plain or gzip), one byte per label. Same errors, with magic 0x00000801.
std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path);

// The same from the file's (decompressed) bytes; `path` names it in errors.
IdxImages parse_idx_images(std::vector<std::uint8_t> bytes, const std::filesystem::path& path);
std::vector<std::uint8_t> parse_idx_labels(std::vector<std::uint8_t> bytes, const std::filesystem::path& path);

// Reads an image file and its label file into a Dataset of 1 x rows x cols images scaled to [0, 1].
// Throws InputError "LABELS: 60000 labels but IMAGES has 59999 images" when the counts differ and
// "LABELS: offset N: label L is not a class (expected 0..classes-1)" for a label >= classes.
Dataset read_idx_dataset(const std::filesystem::path& images, const std::filesystem::path& labels, int classes,
                         std::string name);

// The bytes of an IDX image file holding `images` (header and pixels), e.g. to write test fixtures or subsets with
// write_binary_file (core/data/binary_file.hpp). InternalError when pixels.size() != count x rows x cols.
std::vector<std::uint8_t> encode_idx_images(const IdxImages& images);

// The bytes of an IDX label file holding `labels`.
std::vector<std::uint8_t> encode_idx_labels(std::span<const std::uint8_t> labels);

}  // namespace dsgd::data
