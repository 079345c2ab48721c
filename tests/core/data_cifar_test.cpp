#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/data/binary_file.hpp"
#include "core/data/catalog.hpp"
#include "core/data/cifar.hpp"
#include "core/error.hpp"
#include "tests/support/dataset_shape.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::data {
namespace {

namespace fs = std::filesystem;

using CoreDataCifar = dsgd::testing::ScratchDirTest;  // a fresh folder per test, and write()

// `labels.size()` records; pixel k of record r holds (r * 31 + k) mod 256, so every record and position differs.
std::vector<std::uint8_t> cifar_records(const std::vector<std::uint8_t>& labels, std::size_t first_record = 0) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    bytes.push_back(labels[r]);
    for (std::size_t k = 0; k < 3072; ++k) {
      bytes.push_back(static_cast<std::uint8_t>(((first_record + r) * 31 + k) % 256));
    }
  }
  return bytes;
}

using dsgd::testing::DatasetShape;
using dsgd::testing::input_error;
using dsgd::testing::shape_of;

TEST_F(CoreDataCifar, ReadsRecordsOfSeveralFilesInOrder) {
  const fs::path a = write("data_batch_1.bin", cifar_records({6, 9}));
  const fs::path b = write("data_batch_2.bin", gzip_bytes(cifar_records({0}, 2)));  // gzip is accepted too
  const Dataset data = read_cifar10({a, b}, "cifar");
  ASSERT_EQ(shape_of(data), (DatasetShape{"cifar", 3, 3, 32, 32, 10}));  // 3 records of 3 x 32 x 32, 10 classes
  EXPECT_EQ(data.labels, (std::vector<std::int32_t>{6, 9, 0}));
  ASSERT_EQ(data.images.size(), 3U * 3072U);
  for (std::size_t r = 0; r < 3; ++r) {
    // Channel-major as in the file: red plane, green plane, blue plane.
    for (const std::size_t k : {std::size_t{0}, std::size_t{1023}, std::size_t{1024}, std::size_t{3071}}) {
      EXPECT_FLOAT_EQ(data.image(r)[k], static_cast<float>((r * 31 + k) % 256) / 255.0f) << r << " " << k;
    }
  }
}

TEST_F(CoreDataCifar, TruncatedRecordNamesOffsetAndSize) {
  std::vector<std::uint8_t> bytes = cifar_records({1, 2});
  bytes.resize(bytes.size() + 5, 7);
  const fs::path path = write("data_batch_1.bin", bytes);
  EXPECT_EQ(input_error([&] { read_cifar10({path}, "c"); }),
            path.string() +
                ": offset 6146: file size 6151 is not a multiple of 3073 (1 label byte + 3072 pixel bytes); the last "
                "record has only 5 bytes");
}

TEST_F(CoreDataCifar, LabelAboveNineNamesTheRecordOffset) {
  const fs::path good = write("data_batch_1.bin", cifar_records({1}));
  const fs::path bad = write("data_batch_2.bin", cifar_records({3, 10, 4}));
  EXPECT_EQ(input_error([&] {
              read_cifar10({good, bad}, "c");
            }),
            bad.string() + ": offset 3073: label 10 is not a CIFAR-10 class (expected 0..9)");
}

TEST_F(CoreDataCifar, EmptyAndMissingFiles) {
  const fs::path empty = write("test_batch.bin", {});
  EXPECT_EQ(input_error([&] { read_cifar10({empty}, "c"); }),
            empty.string() + ": offset 0: empty file (expected records of 3073 bytes)");
  const fs::path absent = dir_ / "data_batch_9.bin";
  EXPECT_EQ(input_error([&] { read_cifar10({absent}, "c"); }), absent.string() + ": no such file");
}

TEST_F(CoreDataCifar, FolderLayoutAndCatalogName) {
  // As the archive unpacks: FOLDER/cifar-10-batches-bin/...
  write("cifar-10-batches-bin/data_batch_1.bin", cifar_records({1, 2}));
  write("cifar-10-batches-bin/data_batch_2.bin", cifar_records({3}));
  write("cifar-10-batches-bin/test_batch.bin", cifar_records({4, 5, 6}));
  const auto train_files = cifar10_files(dir_, true);
  ASSERT_EQ(train_files.size(), 2U);
  EXPECT_EQ(train_files[1].filename(), "data_batch_2.bin");

  const std::string name = "cifar10:" + dir_.string();
  const Dataset train = load_dataset(name, Split::kTrain);
  EXPECT_EQ(train.name, name + " (train)");
  EXPECT_EQ(train.labels, (std::vector<std::int32_t>{1, 2, 3}));
  const Dataset test = load_dataset(name, Split::kTest);
  EXPECT_EQ(test.labels, (std::vector<std::int32_t>{4, 5, 6}));
  // A bare folder is recognised by its files.
  EXPECT_EQ(load_dataset(dir_.string(), Split::kTest).labels, test.labels);
}

TEST_F(CoreDataCifar, FolderErrors) {
  const fs::path absent = dir_ / "nothing";
  EXPECT_EQ(input_error([&] { load_dataset("cifar10:" + absent.string(), Split::kTrain); }),
            absent.string() + ": no such folder");
  write("data_batch_1.bin", cifar_records({1}));
  EXPECT_EQ(input_error([&] { load_dataset("cifar10:" + dir_.string(), Split::kTest); }),
            dir_.string() +
                ": no test_batch.bin (expected the CIFAR-10 binary files data_batch_1.bin .. data_batch_5.bin and "
                "test_batch.bin)");
  EXPECT_EQ(input_error([&] { load_dataset("cifar10", Split::kTrain); }),
            "dataset 'cifar10': expected 'cifar10:FOLDER', a folder after the colon");
}

}  // namespace
}  // namespace dsgd::data
