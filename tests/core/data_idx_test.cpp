#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/data/binary_file.hpp"
#include "core/data/idx.hpp"
#include "core/error.hpp"
#include "tests/support/dataset_shape.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::data {
namespace {

namespace fs = std::filesystem;

using CoreDataIdx = dsgd::testing::ScratchDirTest;  // a fresh folder per test, and write()

// Three 2 x 4 images whose pixels are all distinct (and include 0 and 255), labels 0..9.
IdxImages small_images() {
  IdxImages images;
  images.count = 3;
  images.rows = 2;
  images.cols = 4;
  for (std::size_t k = 0; k < 24; ++k) images.pixels.push_back(static_cast<std::uint8_t>(k == 23 ? 255 : k * 7));
  return images;
}

using dsgd::testing::DatasetShape;
using dsgd::testing::input_error;
using dsgd::testing::shape_of;

std::vector<std::uint8_t> header(std::uint32_t magic, std::vector<std::uint32_t> sizes) {
  std::vector<std::uint8_t> out;
  sizes.insert(sizes.begin(), magic);
  for (const std::uint32_t v : sizes) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
  }
  return out;
}

TEST_F(CoreDataIdx, RoundTripPlainAndGzip) {
  const IdxImages images = small_images();
  const std::vector<std::uint8_t> labels = {3, 0, 9};
  for (const bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "plain");
    const std::string suffix = gz ? ".gz" : "";
    const auto image_bytes = encode_idx_images(images);
    const auto label_bytes = encode_idx_labels(labels);
    const fs::path image_path = write("images" + suffix, gz ? gzip_bytes(image_bytes) : image_bytes);
    const fs::path label_path = write("labels" + suffix, gz ? gzip_bytes(label_bytes) : label_bytes);
    EXPECT_FALSE(is_gzip(read_binary_file(image_path)));  // read_binary_file decompresses

    const IdxImages read = read_idx_images(image_path);
    EXPECT_EQ(read.count, 3U);
    EXPECT_EQ(read.rows, 2);
    EXPECT_EQ(read.cols, 4);
    EXPECT_EQ(read.pixels, images.pixels);
    EXPECT_EQ(read_idx_labels(label_path), labels);

    const Dataset data = read_idx_dataset(image_path, label_path, 10, "small");
    EXPECT_EQ(shape_of(data), (DatasetShape{"small", 3, 1, 2, 4, 10}));  // 3 images of 1 x 2 x 4, 10 classes
    EXPECT_EQ(data.labels, (std::vector<std::int32_t>{3, 0, 9}));
    EXPECT_EQ(data.float_labels(), (std::vector<float>{3.0f, 0.0f, 9.0f}));
    ASSERT_EQ(data.images.size(), 24U);
    for (std::size_t k = 0; k < 24; ++k) EXPECT_FLOAT_EQ(data.images[k], images.pixels[k] / 255.0f) << k;
    EXPECT_EQ(data.images[0], 0.0f);
    EXPECT_EQ(data.images[23], 1.0f);
    EXPECT_FLOAT_EQ(data.image(1)[0], images.pixels[8] / 255.0f);
  }
}

TEST_F(CoreDataIdx, ConcatenatedGzipMembersAreOneFile) {
  const auto bytes = encode_idx_images(small_images());
  const std::vector<std::uint8_t> first(bytes.begin(), bytes.begin() + 10);
  const std::vector<std::uint8_t> second(bytes.begin() + 10, bytes.end());
  std::vector<std::uint8_t> joined = gzip_bytes(first);
  const auto tail = gzip_bytes(second);
  joined.insert(joined.end(), tail.begin(), tail.end());
  EXPECT_EQ(read_idx_images(write("joined.gz", joined)).pixels, small_images().pixels);
}

TEST_F(CoreDataIdx, MissingFileIsAnInputError) {
  const fs::path path = dir_ / "absent-idx3-ubyte.gz";
  EXPECT_EQ(input_error([&] { read_idx_images(path); }), path.string() + ": no such file");
  EXPECT_EQ(input_error([&] { read_idx_labels(path); }), path.string() + ": no such file");
}

TEST_F(CoreDataIdx, TruncatedImageDataNamesOffsetAndSizes) {
  // The header of Fashion-MNIST's training images followed by only 1 KiB of pixels.
  std::vector<std::uint8_t> bytes = header(0x00000803, {60000, 28, 28});
  bytes.resize(bytes.size() + 1024, 0);
  const fs::path plain = write("train-images-idx3-ubyte", bytes);
  EXPECT_EQ(input_error([&] { read_idx_images(plain); }),
            plain.string() + ": offset 16: expected 47040000 bytes of image data, file ends after 1024");
  // The same content compressed: offsets are in the decompressed file.
  const fs::path gz = write("train-images-idx3-ubyte.gz", gzip_bytes(bytes));
  EXPECT_EQ(input_error([&] { read_idx_images(gz); }),
            gz.string() + ": offset 16: expected 47040000 bytes of image data, file ends after 1024");
}

TEST_F(CoreDataIdx, TruncatedHeaderNamesOffset) {
  const fs::path tiny = write("tiny", {0, 0, 8});
  EXPECT_EQ(input_error([&] { read_idx_images(tiny); }),
            tiny.string() + ": offset 0: file ends after 3 bytes, expected a 4-byte IDX magic number");
  std::vector<std::uint8_t> bytes = header(0x00000803, {5});
  bytes.push_back(0);
  const fs::path short_dims = write("short-dims", bytes);
  EXPECT_EQ(input_error([&] { read_idx_images(short_dims); }),
            short_dims.string() + ": offset 4: expected 12 bytes of dimensions, file ends after 5");
  const fs::path no_count = write("no-count", header(0x00000801, {}));
  EXPECT_EQ(input_error([&] { read_idx_labels(no_count); }),
            no_count.string() + ": offset 4: expected 4 bytes of dimensions, file ends after 0");
}

TEST_F(CoreDataIdx, WrongMagicNamesBothNumbers) {
  const fs::path path = write("wrong", header(0x00000804, {1, 1, 1, 1}));
  EXPECT_EQ(input_error([&] { read_idx_images(path); }),
            path.string() + ": offset 0: magic 0x00000804 is not an IDX image file (expected 0x00000803)");
  // A label file where images are expected, and the other way round.
  const fs::path labels = write("labels", encode_idx_labels(std::vector<std::uint8_t>{1, 2}));
  EXPECT_EQ(input_error([&] { read_idx_images(labels); }),
            labels.string() + ": offset 0: magic 0x00000801 is not an IDX image file (expected 0x00000803)");
  const fs::path images = write("images", encode_idx_images(small_images()));
  EXPECT_EQ(input_error([&] { read_idx_labels(images); }),
            images.string() + ": offset 0: magic 0x00000803 is not an IDX label file (expected 0x00000801)");
  // Some other data type (0x0D: float) with the right dimension count.
  const fs::path floats = write("floats", header(0x00000D03, {1, 1, 1}));
  EXPECT_EQ(input_error([&] { read_idx_images(floats); }),
            floats.string() + ": offset 0: magic 0x00000d03 is not an IDX image file (expected 0x00000803)");
}

TEST_F(CoreDataIdx, TrailingBytesAndEmptyFilesAreErrors) {
  std::vector<std::uint8_t> bytes = encode_idx_images(small_images());
  bytes.resize(bytes.size() + 5, 0);
  const fs::path long_file = write("long", bytes);
  EXPECT_EQ(input_error([&] { read_idx_images(long_file); }),
            long_file.string() + ": offset 40: 5 bytes after the end of the image data (expected end of file)");
  const fs::path none = write("none", header(0x00000803, {0, 28, 28}));
  EXPECT_EQ(input_error([&] { read_idx_images(none); }), none.string() + ": offset 4: the file holds 0 images");
  const fs::path flat = write("flat", header(0x00000803, {2, 0, 28}));
  EXPECT_EQ(input_error([&] { read_idx_images(flat); }), flat.string() + ": offset 8: image size 0 x 28 is not valid");
  std::vector<std::uint8_t> labels = header(0x00000801, {4});
  labels.push_back(1);
  const fs::path short_labels = write("short-labels", labels);
  EXPECT_EQ(input_error([&] { read_idx_labels(short_labels); }),
            short_labels.string() + ": offset 8: expected 4 bytes of label data, file ends after 1");
}

TEST_F(CoreDataIdx, HugeHeaderDoesNotOverflow) {
  const fs::path path = write("huge", header(0x00000803, {0xffffffffU, 0x7fffffffU, 0x7fffffffU}));
  EXPECT_EQ(input_error([&] { read_idx_images(path); }),
            path.string() + ": offset 16: expected more than 2^64 bytes of image data, file ends after 0");
}

TEST_F(CoreDataIdx, TruncatedOrCorruptGzipIsAnInputError) {
  const auto compressed = gzip_bytes(encode_idx_images(small_images()));
  const std::vector<std::uint8_t> cut(compressed.begin(), compressed.begin() + 20);
  const fs::path truncated = write("cut.gz", cut);
  const std::string message = input_error([&] { read_idx_images(truncated); });
  EXPECT_EQ(message.rfind(truncated.string() + ": offset 20 of the compressed file: gzip data ends early", 0), 0U)
      << message;

  std::vector<std::uint8_t> corrupt = compressed;
  corrupt[corrupt.size() - 6] ^= 0xff;  // inside the CRC32 of the trailer
  const fs::path bad = write("bad.gz", corrupt);
  const std::string bad_message = input_error([&] { read_idx_images(bad); });
  EXPECT_NE(bad_message.find(bad.string() + ": offset "), std::string::npos) << bad_message;
  EXPECT_NE(bad_message.find("corrupt gzip data"), std::string::npos) << bad_message;
}

// Issue 26: a 1 MB gzip whose header declares 128 images inflated to 1 GB before the size check. Decompression now
// stops one byte past what the header declares, so the error names the declared size, not the inflated one.
TEST_F(CoreDataIdx, AGzipBombStopsAtTheDeclaredSize) {
  std::vector<std::uint8_t> bomb = header(0x00000803, {2, 28, 28});
  bomb.resize(bomb.size() + (std::size_t{64} << 20), 0);  // 64 MiB of zeros: about 64 KiB compressed
  const auto compressed = gzip_bytes(bomb);
  ASSERT_LT(compressed.size(), std::size_t{1} << 20);
  const fs::path path = write("bomb.gz", compressed);
  EXPECT_EQ(input_error([&] { read_idx_images(path); }),
            path.string() +
                ": offset 1584: the data goes on after the 1584 bytes its header declares (expected end "
                "of file)");
  // The same bytes with the size the header declares read as before.
  bomb.resize(16 + 2 * 28 * 28);
  const fs::path exact = write("exact.gz", gzip_bytes(bomb));
  EXPECT_EQ(read_idx_images(exact).count, 2U);
}

TEST_F(CoreDataIdx, LabelsThatDoNotMatchImages) {
  const fs::path images = write("IMAGES", encode_idx_images(small_images()));
  const fs::path four = write("LABELS", encode_idx_labels(std::vector<std::uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(input_error([&] { read_idx_dataset(images, four, 10, "x"); }),
            four.string() + ": 4 labels but " + images.string() + " has 3 images");
  const fs::path out_of_range = write("RANGE", encode_idx_labels(std::vector<std::uint8_t>{1, 10, 3}));
  EXPECT_EQ(input_error([&] { read_idx_dataset(images, out_of_range, 10, "x"); }),
            out_of_range.string() + ": offset 9: label 10 is not a class (expected 0..9)");
}

}  // namespace
}  // namespace dsgd::data
