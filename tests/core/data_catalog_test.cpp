#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/data/binary_file.hpp"
#include "core/data/catalog.hpp"
#include "core/data/idx.hpp"
#include "core/error.hpp"
#include "core/stopwatch.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::data {
namespace {

namespace fs = std::filesystem;

class CoreDataCatalog : public dsgd::testing::ScratchDirTest {
 protected:
  // Writes the four IDX files of a tiny MNIST-like dataset (train: 6 images, test: 3; 2 x 2 pixels) into `folder`.
  void write_idx_folder(const fs::path& folder, bool gz, std::uint8_t max_label = 4) {
    const auto put = [&](const std::string& name, const std::vector<std::uint8_t>& bytes) {
      write_binary_file(folder / (name + (gz ? ".gz" : "")), gz ? gzip_bytes(bytes) : bytes);
    };
    for (const bool train : {true, false}) {
      IdxImages images;
      images.count = train ? 6 : 3;
      images.rows = 2;
      images.cols = 2;
      std::vector<std::uint8_t> labels;
      for (std::size_t i = 0; i < images.count; ++i) {
        for (std::size_t k = 0; k < 4; ++k) images.pixels.push_back(static_cast<std::uint8_t>(i * 40 + k * 10));
        labels.push_back(static_cast<std::uint8_t>(i == 0 && train ? max_label : i % 3));
      }
      const std::string prefix = train ? "train" : "t10k";
      put(prefix + "-images-idx3-ubyte", encode_idx_images(images));
      put(prefix + "-labels-idx1-ubyte", encode_idx_labels(labels));
    }
  }
};

using dsgd::testing::error_of;

// The mean and the mean square of `values`, summed in double.
struct Moments {
  double mean = 0;
  double mean_square = 0;
};
Moments moments(std::span<const float> values) {
  double sum = 0;
  double sum_sq = 0;
  for (const float v : values) {
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(values.size());
  return {sum / n, sum_sq / n};
}

TEST_F(CoreDataCatalog, UnknownNameListsTheValidOnes) {
  EXPECT_EQ(error_of<UnknownNameError>([] { load_dataset("imagenet", Split::kTrain); }),
            "unknown dataset 'imagenet'; valid values are: fashion-mnist, mnist, idx:FOLDER, cifar10:FOLDER, a folder "
            "holding IDX or CIFAR-10 files");
  const auto catalog = dataset_catalog();
  ASSERT_EQ(catalog.size(), 4U);
  EXPECT_EQ(catalog[0].name, "fashion-mnist");
  EXPECT_EQ(catalog[3].name, "cifar10:FOLDER");
  EXPECT_EQ(error_of<InputError>([] { load_dataset("fashion-mnist:/x", Split::kTrain); }),
            "dataset 'fashion-mnist:/x': expected 'fashion-mnist'");
  EXPECT_EQ(error_of<InputError>([&] { load_dataset((dir_ / "none").string(), Split::kTrain); }),
            (dir_ / "none").string() + ": no such folder");
}

TEST_F(CoreDataCatalog, PackagedDatasetAbsentNamesTheDebianPackage) {
  EXPECT_EQ(error_of<UnavailableError>([&] { load_dataset("fashion-mnist", Split::kTrain, dir_); }),
            "dataset 'fashion-mnist' is not installed (no " +
                (dir_ / "fashion-mnist/train-images-idx3-ubyte.gz").string() +
                "): install dataset-fashion-mnist (scripts/setup.sh does)");
  const std::string mnist = error_of<UnavailableError>([&] { load_dataset("mnist", Split::kTest, dir_); });
  EXPECT_EQ(mnist.rfind("dataset 'mnist' is not installed (no " + (dir_ / "mnist/t10k-images-idx3-ubyte.gz").string() +
                            "): Debian 12 packages no MNIST",
                        0),
            0U)
      << mnist;
}

TEST_F(CoreDataCatalog, PackagedLayoutLoadsBothSplits) {
  write_idx_folder(dir_ / "fashion-mnist", true, 9);
  const Dataset train = load_dataset("fashion-mnist", Split::kTrain, dir_);
  EXPECT_EQ(train.name, "fashion-mnist (train)");
  EXPECT_EQ(train.size(), 6U);
  EXPECT_EQ(train.classes, 10);
  EXPECT_EQ(train.labels[0], 9);
  const Dataset test = load_dataset("fashion-mnist", Split::kTest, dir_);
  EXPECT_EQ(test.name, "fashion-mnist (test)");
  EXPECT_EQ(test.size(), 3U);
  EXPECT_FLOAT_EQ(test.images[5], 50.0f / 255.0f);
}

TEST_F(CoreDataCatalog, TruncatedPackagedFileIsAnInputErrorNamingIt) {
  write_idx_folder(dir_ / "fashion-mnist", false);
  const fs::path images = dir_ / "fashion-mnist/t10k-images-idx3-ubyte";
  fs::resize_file(images, 16 + 5);
  EXPECT_EQ(error_of<InputError>([&] { load_dataset("fashion-mnist", Split::kTest, dir_); }),
            images.string() + ": offset 16: expected 12 bytes of image data, file ends after 5");
}

TEST_F(CoreDataCatalog, IdxFolderInfersClassesFromTrainingLabels) {
  write_idx_folder(dir_ / "plain", false, 4);
  const Dataset test = load_dataset("idx:" + (dir_ / "plain").string(), Split::kTest);
  EXPECT_EQ(test.classes, 5);
  EXPECT_EQ(test.height, 2);
  // A bare folder path is recognised from its file names.
  EXPECT_EQ(load_dataset((dir_ / "plain").string(), Split::kTrain).classes, 5);
  EXPECT_EQ(error_of<InputError>([&] { load_dataset("idx:" + (dir_ / "gone").string(), Split::kTest); }),
            (dir_ / "gone").string() + ": no such folder");
}

TEST_F(CoreDataCatalog, LoadNormalizedUsesTrainingStatistics) {
  write_idx_folder(dir_ / "d", true);
  const TrainTestData data = load_normalized("idx:" + (dir_ / "d").string());
  ASSERT_EQ(data.stats.mean.size(), 1U);
  const Moments pixels = moments(data.train.images);
  EXPECT_NEAR(pixels.mean, 0.0, 1e-6);
  EXPECT_NEAR(pixels.mean_square, 1.0, 1e-5);
}

// The real data from Debian's dataset-fashion-mnist, when installed (scripts/setup.sh installs it).
TEST(CoreDataFashionMnist, RealFilesLoad) {
  if (!fs::exists(fs::path(kDebianDatasetsRoot) / "fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  const auto start = std::chrono::steady_clock::now();
  const TrainTestData data = load_normalized("fashion-mnist");
  const double seconds = seconds_since(start);
  // Reported, not asserted: speed goals live in benchmarks (docs/design.md "Measurement").
  RecordProperty("load_and_normalize_s", std::to_string(seconds));
  std::cout << "fashion-mnist: both splits read and normalised in " << seconds << " s\n";

  for (const Dataset* split : {&data.train, &data.test}) {
    EXPECT_EQ(split->channels, 1);
    EXPECT_EQ(split->height, 28);
    EXPECT_EQ(split->width, 28);
    EXPECT_EQ(split->classes, 10);
    EXPECT_EQ(split->images.size(), split->size() * 784U);
  }
  EXPECT_EQ(data.train.size(), 60000U);
  EXPECT_EQ(data.test.size(), 10000U);
  EXPECT_EQ(data.train.class_counts(), std::vector<std::size_t>(10, 6000));
  EXPECT_EQ(data.test.class_counts(), std::vector<std::size_t>(10, 1000));
  // Fashion-MNIST's training pixels (scaled to [0, 1]) have mean 0.2860 and standard deviation 0.3530, the values
  // torchvision users normalise with; after normalisation the training set has mean 0 and variance 1.
  EXPECT_NEAR(data.stats.mean[0], 0.2860, 5e-4);
  EXPECT_NEAR(data.stats.stddev[0], 0.3530, 5e-4);
  const Moments pixels = moments(data.train.images);
  EXPECT_NEAR(pixels.mean, 0.0, 1e-5);
  EXPECT_NEAR(pixels.mean_square - pixels.mean * pixels.mean, 1.0, 1e-4);
}

}  // namespace
}  // namespace dsgd::data
