#include "core/data/idx.hpp"

#include <cstdio>
#include <limits>
#include <string>

#include "core/data/binary_file.hpp"
#include "core/error.hpp"

namespace dsgd::data {
namespace {

constexpr std::size_t kMagicBytes = 4;
constexpr std::size_t kDimensionBytes = 4;

std::string hex32(std::uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

std::uint32_t big_endian32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | std::uint32_t{p[3]};
}

void append_big_endian32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}

[[noreturn]] void fail(const std::filesystem::path& path, std::size_t offset, const std::string& what) {
  throw InputError(path.string() + ": offset " + std::to_string(offset) + ": " + what);
}

// Checks the magic number and reads the dimensions; returns them (the data starts after them).
std::vector<std::uint32_t> read_header(std::span<const std::uint8_t> bytes, const std::filesystem::path& path,
                                       std::uint32_t magic, const char* kind) {
  if (bytes.size() < kMagicBytes) {
    fail(path, 0, "file ends after " + std::to_string(bytes.size()) + " bytes, expected a 4-byte IDX magic number");
  }
  const std::uint32_t found = big_endian32(bytes.data());
  if (found != magic) {
    fail(path, 0, "magic " + hex32(found) + " is not an IDX " + kind + " file (expected " + hex32(magic) + ")");
  }
  // The magic's last byte is the number of dimensions, each a big-endian 32-bit size.
  const std::size_t dimensions = magic & 0xffu;
  const std::size_t header_bytes = dimensions * kDimensionBytes;
  if (bytes.size() - kMagicBytes < header_bytes) {
    fail(path, kMagicBytes,
         "expected " + std::to_string(header_bytes) + " bytes of dimensions, file ends after " +
             std::to_string(bytes.size() - kMagicBytes));
  }
  std::vector<std::uint32_t> sizes(dimensions);
  for (std::size_t d = 0; d < dimensions; ++d) {
    sizes[d] = big_endian32(bytes.data() + kMagicBytes + d * kDimensionBytes);
  }
  return sizes;
}

// The file size an IDX header declares (header and data; saturating at the largest size_t), once the prefix holds
// the header: a gzip file is decompressed no further (core/data/binary_file.hpp).
ExpectedSize declared_size(const std::filesystem::path& path, std::uint32_t magic, const char* kind) {
  return [path, magic, kind](std::span<const std::uint8_t> prefix) -> std::optional<std::size_t> {
    const std::size_t header_bytes = kMagicBytes + (magic & 0xffu) * kDimensionBytes;
    if (prefix.size() < header_bytes) return std::nullopt;
    constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
    std::size_t total = 1;
    for (const std::uint32_t size : read_header(prefix, path, magic, kind)) {
      total = size != 0 && total > kMax / size ? kMax : total * size;
    }
    return total > kMax - header_bytes ? kMax : total + header_bytes;
  };
}

// Checks that exactly `expected` data bytes follow the header at `offset`.
void check_data_size(const std::vector<std::uint8_t>& bytes, const std::filesystem::path& path, std::size_t offset,
                     std::size_t expected, const char* what) {
  const std::size_t available = bytes.size() - offset;
  if (available < expected) {
    fail(path, offset,
         "expected " + std::to_string(expected) + " bytes of " + what + ", file ends after " +
             std::to_string(available));
  }
  if (available > expected) {
    fail(path, offset + expected,
         std::to_string(available - expected) + " bytes after the end of the " + what + " (expected end of file)");
  }
}

}  // namespace

IdxImages read_idx_images(const std::filesystem::path& path) {
  return parse_idx_images(read_binary_file(path, declared_size(path, kIdxImagesMagic, "image")), path);
}

IdxImages parse_idx_images(std::vector<std::uint8_t> bytes, const std::filesystem::path& path) {
  const std::vector<std::uint32_t> sizes = read_header(bytes, path, kIdxImagesMagic, "image");
  const std::size_t offset = kMagicBytes + sizes.size() * kDimensionBytes;
  if (sizes[0] == 0) fail(path, kMagicBytes, "the file holds 0 images");
  if (sizes[1] == 0 || sizes[2] == 0 || sizes[1] > std::numeric_limits<int>::max() ||
      sizes[2] > std::numeric_limits<int>::max()) {
    fail(path, kMagicBytes + kDimensionBytes,
         "image size " + std::to_string(sizes[1]) + " x " + std::to_string(sizes[2]) + " is not valid");
  }
  // count x rows x cols can exceed 64 bits (three 32-bit factors): compare by division instead of multiplying.
  const std::size_t per_image = std::size_t{sizes[1]} * std::size_t{sizes[2]};
  const std::size_t available = bytes.size() - offset;
  if (available / per_image < sizes[0]) {
    const bool fits = sizes[0] <= std::numeric_limits<std::size_t>::max() / per_image;
    fail(path, offset,
         "expected " + (fits ? std::to_string(std::size_t{sizes[0]} * per_image) : "more than 2^64") +
             " bytes of image data, file ends after " + std::to_string(available));
  }
  check_data_size(bytes, path, offset, std::size_t{sizes[0]} * per_image, "image data");

  IdxImages images;
  images.count = sizes[0];
  images.rows = static_cast<int>(sizes[1]);
  images.cols = static_cast<int>(sizes[2]);
  // Drop the header in place rather than copying 47 MB into a new vector.
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(offset));
  images.pixels = std::move(bytes);
  return images;
}

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path) {
  return parse_idx_labels(read_binary_file(path, declared_size(path, kIdxLabelsMagic, "label")), path);
}

std::vector<std::uint8_t> parse_idx_labels(std::vector<std::uint8_t> bytes, const std::filesystem::path& path) {
  const std::vector<std::uint32_t> sizes = read_header(bytes, path, kIdxLabelsMagic, "label");
  const std::size_t offset = kMagicBytes + sizes.size() * kDimensionBytes;
  if (sizes[0] == 0) fail(path, kMagicBytes, "the file holds 0 labels");
  check_data_size(bytes, path, offset, sizes[0], "label data");
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(offset));
  return bytes;
}

Dataset read_idx_dataset(const std::filesystem::path& images_path, const std::filesystem::path& labels_path,
                         int classes, std::string name) {
  DSGD_ENFORCE(classes > 0 && classes <= 256, "IDX labels are bytes");
  const IdxImages images = read_idx_images(images_path);
  const std::vector<std::uint8_t> labels = read_idx_labels(labels_path);
  if (labels.size() != images.count) {
    throw InputError(labels_path.string() + ": " + std::to_string(labels.size()) + " labels but " +
                     images_path.string() + " has " + std::to_string(images.count) + " images");
  }
  // The label data starts after the 4-byte magic and the one 4-byte count.
  constexpr std::size_t kLabelOffset = kMagicBytes + kDimensionBytes;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= classes) {
      throw InputError(labels_path.string() + ": offset " + std::to_string(kLabelOffset + i) + ": label " +
                       std::to_string(labels[i]) + " is not a class (expected 0.." + std::to_string(classes - 1) + ")");
    }
  }

  Dataset data;
  data.name = std::move(name);
  data.channels = 1;
  data.height = images.rows;
  data.width = images.cols;
  data.classes = classes;
  data.labels.assign(labels.begin(), labels.end());
  data.images.resize(images.pixels.size());
  const std::uint8_t* in = images.pixels.data();
  float* out = data.images.data();
  const std::size_t n = images.pixels.size();
  // Scale to [0, 1] before normalisation (issue 4): the statistics then read as fractions of full intensity.
#pragma omp simd
  for (std::size_t k = 0; k < n; ++k) out[k] = static_cast<float>(in[k]) / 255.0f;
  return data;
}

std::vector<std::uint8_t> encode_idx_images(const IdxImages& images) {
  DSGD_ENFORCE_EQ(images.pixels.size(),
                  images.count * static_cast<std::size_t>(images.rows) * static_cast<std::size_t>(images.cols));
  std::vector<std::uint8_t> out;
  out.reserve(16 + images.pixels.size());
  append_big_endian32(out, kIdxImagesMagic);
  append_big_endian32(out, static_cast<std::uint32_t>(images.count));
  append_big_endian32(out, static_cast<std::uint32_t>(images.rows));
  append_big_endian32(out, static_cast<std::uint32_t>(images.cols));
  out.insert(out.end(), images.pixels.begin(), images.pixels.end());
  return out;
}

std::vector<std::uint8_t> encode_idx_labels(std::span<const std::uint8_t> labels) {
  std::vector<std::uint8_t> out;
  out.reserve(8 + labels.size());
  append_big_endian32(out, kIdxLabelsMagic);
  append_big_endian32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

}  // namespace dsgd::data
