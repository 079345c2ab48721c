#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/data/binary_file.hpp"
#include "core/data/idx.hpp"
#include "core/data/libsvm.hpp"
#include "core/data/sparse_presets.hpp"
#include "core/error.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::data {
namespace {

using dsgd::testing::error_of;

class CoreDataSparsePresets : public ::testing::TestWithParam<std::string> {};

// "rcv1-test-like" -> "rcv1_test_like" (gtest names take no '-').
std::string preset_test_name(const ::testing::TestParamInfo<std::string>& preset) {
  std::string name = preset.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Table III's shape at the reduced size: rows and features as declared, the average non-zeros per row within 3%,
// the minimum and maximum reached and never passed, valid CSR, both classes well represented.
TEST_P(CoreDataSparsePresets, ReducedSizeMatchesTableIII) {
  const SparsePreset& preset = find_sparse_preset(GetParam());
  const SparseDataset data = generate_preset(preset, PresetSize::kReduced, 1);
  check_sparse(data);
  const SparseStats stats = sparse_stats(data);
  EXPECT_EQ(stats.rows, preset.reduced_examples);
  EXPECT_EQ(stats.features, preset.reduced_features);
  EXPECT_NEAR(stats.avg_row_nnz, preset.avg_row_nnz, 0.03 * preset.avg_row_nnz)
      << "expectation " << preset.avg_row_nnz << " (Table III)";
  EXPECT_EQ(stats.min_row_nnz, preset.min_row_nnz) << "Table III's minimum";
  EXPECT_EQ(stats.max_row_nnz, preset.max_row_nnz) << "Table III's maximum";
  EXPECT_GT(stats.positive_fraction, 0.4);
  EXPECT_LT(stats.positive_fraction, 0.6);
  EXPECT_EQ(data.name, preset.name + " (reduced, seed 1)");
}

// The kind of values each shape promises.
TEST_P(CoreDataSparsePresets, ValuesHaveTheShapesKind) {
  const SparsePreset& preset = find_sparse_preset(GetParam());
  const SparseDataset data = generate_preset(preset, PresetSize::kReduced, 2);
  for (std::size_t row = 0; row < data.rows(); ++row) {
    const auto indices = data.row_index(row);
    const auto values = data.row_value(row);
    switch (preset.shape) {
      case SparseShape::kText: {
        double norm2 = 0;
        for (const float v : values) {
          ASSERT_GT(v, 0.0f) << "row " << row;
          norm2 += double{v} * v;
        }
        ASSERT_NEAR(norm2, 1.0, 1e-5) << "row " << row << ": text rows have unit L2 norm";
        break;
      }
      case SparseShape::kBinary:
        for (const float v : values) ASSERT_EQ(v, 1.0f) << "row " << row;
        break;
      case SparseShape::kConnect4: {
        ASSERT_EQ(indices.size(), 42U);
        for (std::size_t k = 0; k < indices.size(); ++k) {
          ASSERT_EQ(indices[k] / 3, k) << "row " << row << ": one state per board cell";
          ASSERT_EQ(values[k], 1.0f);
        }
        const auto pieces = std::count_if(indices.begin(), indices.end(), [](std::uint32_t i) { return i % 3 != 2; });
        ASSERT_EQ(pieces, 8) << "row " << row << ": 8-ply positions";
        break;
      }
      case SparseShape::kCovtype: {
        ASSERT_GE(indices.size(), 9U);
        ASSERT_LE(indices.size(), 12U);
        int wilderness = 0;
        int soil = 0;
        for (std::size_t k = 0; k < indices.size(); ++k) {
          if (indices[k] < 10) {
            ASSERT_GT(values[k], 0.0f);
            ASSERT_LE(values[k], 1.0f);
          } else {
            ASSERT_EQ(values[k], 1.0f);
            (indices[k] < 14 ? wilderness : soil) += 1;
          }
        }
        ASSERT_EQ(wilderness, 1) << "row " << row;
        ASSERT_EQ(soil, 1) << "row " << row;
        break;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, CoreDataSparsePresets,
                         ::testing::Values("news20-like", "rcv1-v2-like", "rcv1-test-like", "real-sim-like", "w8a-like",
                                           "connect4-like", "covtype-like"),
                         preset_test_name);

TEST(CoreDataSparsePresetsCatalog, ListsTableIIIsSevenInOrder) {
  std::vector<std::string> names;
  for (const SparsePreset& p : sparse_presets()) {
    names.push_back(p.name);
    EXPECT_NEAR(static_cast<double>(p.nnz) / static_cast<double>(p.examples), p.avg_row_nnz, 5e-4) << p.name;
    EXPECT_LE(p.reduced_examples, p.examples) << p.name;
    EXPECT_LE(p.reduced_features, p.features) << p.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"news20-like", "rcv1-v2-like", "rcv1-test-like", "real-sim-like",
                                             "w8a-like", "connect4-like", "covtype-like"}));
  EXPECT_EQ(find_sparse_preset("rcv1-test-like").examples, 677'399U);
  EXPECT_EQ(preset_rows(find_sparse_preset("covtype-like"), PresetSize::kFull), 581'012U);
}

TEST(CoreDataSparsePresetsCatalog, UnknownNamesListTheValidOnes) {
  EXPECT_EQ(error_of<UnknownNameError>([] { find_sparse_preset("rcv2"); }),
            "unknown sparse preset 'rcv2'; valid values are: news20-like, rcv1-v2-like, rcv1-test-like, "
            "real-sim-like, w8a-like, connect4-like, covtype-like");
  EXPECT_EQ(error_of<UnknownNameError>([] { load_sparse("rcv2", PresetSize::kReduced, 1); }),
            "unknown sparse data set 'rcv2'; valid values are: news20-like, rcv1-v2-like, rcv1-test-like, "
            "real-sim-like, w8a-like, connect4-like, covtype-like, libsvm:FILE, fashion-mnist-binary[:CLASS]");
  EXPECT_EQ(error_of<UnknownNameError>([] { parse_preset_size("tiny"); }),
            "unknown preset size 'tiny'; valid values are: reduced, full");
  EXPECT_EQ(parse_preset_size("full"), PresetSize::kFull);
  EXPECT_EQ(sparse_data_catalog().size(), 9U);
}

TEST(CoreDataSparsePresetsCatalog, ASeedGivesTheSameBits) {
  for (const char* name : {"real-sim-like", "w8a-like", "connect4-like", "covtype-like"}) {
    const SparsePreset& preset = find_sparse_preset(name);
    const SparseDataset a = generate_preset(preset, PresetSize::kReduced, 42);
    const SparseDataset b = generate_preset(preset, PresetSize::kReduced, 42);
    const SparseDataset c = generate_preset(preset, PresetSize::kReduced, 43);
    EXPECT_EQ(a.row_begin, b.row_begin) << name;
    EXPECT_EQ(a.index, b.index) << name;
    EXPECT_EQ(a.value, b.value) << name;  // exact float equality: bit-reproducible
    EXPECT_EQ(a.label, b.label) << name;
    EXPECT_NE(a.index == c.index && a.value == c.value && a.label == c.label, true) << name << ": seeds differ";
  }
}

// Text presets draw features with a Zipf-like popularity: a few are in many rows, most in few.
TEST(CoreDataSparsePresetsCatalog, TextFeaturePopularityIsSkewed) {
  const SparseDataset data = generate_preset(find_sparse_preset("rcv1-test-like"), PresetSize::kReduced, 1);
  std::vector<std::size_t> rows_with(data.features, 0);
  for (const std::uint32_t f : data.index) ++rows_with[f];
  std::sort(rows_with.begin(), rows_with.end(), std::greater<>());
  std::size_t top_share = 0;
  for (std::size_t f = 0; f < data.features / 100; ++f) top_share += rows_with[f];
  EXPECT_GT(static_cast<double>(top_share) / static_cast<double>(data.nnz()), 0.3)
      << "the most popular 1% of features hold over 30% of the non-zeros";
  EXPECT_LT(rows_with[data.features / 2], rows_with[0] / 100) << "the median feature is far rarer than the top one";
}

class CoreDataSparsePresetsLoad : public dsgd::testing::ScratchDirTest {};

TEST_F(CoreDataSparsePresetsLoad, ResolvesPresetsAndLibsvmFiles) {
  const SparseDataset generated = load_sparse("w8a-like", PresetSize::kReduced, 5);
  EXPECT_EQ(generated.index, generate_preset(find_sparse_preset("w8a-like"), PresetSize::kReduced, 5).index);
  const std::string text = "+1 1:1 3:0.5\n-1 2:2\n";
  write_binary_file(dir_ / "x.svm", std::vector<std::uint8_t>(text.begin(), text.end()));
  const SparseDataset file = load_sparse("libsvm:" + (dir_ / "x.svm").string(), PresetSize::kFull, 1);
  EXPECT_EQ(file.rows(), 2U);
  EXPECT_EQ(file.features, 3U);
  EXPECT_EQ(file.name, (dir_ / "x.svm").string());
}

TEST_F(CoreDataSparsePresetsLoad, FashionMnistBinaryIsOneClassAgainstTheRest) {
  // A 5-image stand-in for Debian's package under a private datasets root.
  IdxImages images;
  images.count = 5;
  images.rows = 2;
  images.cols = 2;
  images.pixels = {0, 255, 0, 0, 10, 0, 0, 20, 1, 2, 3, 4, 0, 0, 0, 0, 9, 0, 9, 0};
  const std::vector<std::uint8_t> labels = {3, 0, 3, 7, 0};
  write_binary_file(dir_ / "fashion-mnist" / "train-images-idx3-ubyte.gz", gzip_bytes(encode_idx_images(images)));
  write_binary_file(dir_ / "fashion-mnist" / "train-labels-idx1-ubyte.gz", gzip_bytes(encode_idx_labels(labels)));
  const SparseDataset zero = load_sparse("fashion-mnist-binary", PresetSize::kReduced, 1, dir_);
  EXPECT_EQ(zero.label, (std::vector<float>{-1, 1, -1, -1, 1}));
  EXPECT_EQ(zero.features, 4U);
  EXPECT_EQ(zero.nnz(), 1U + 2U + 4U + 0U + 2U);
  EXPECT_EQ(zero.name, "fashion-mnist-binary:0 (reduced, 5 training images)");
  const SparseDataset three = load_sparse("fashion-mnist-binary:3", PresetSize::kFull, 1, dir_);
  EXPECT_EQ(three.label, (std::vector<float>{1, -1, 1, -1, -1}));
  EXPECT_EQ(error_of<InputError>([&] { load_sparse("fashion-mnist-binary:x", PresetSize::kFull, 1, dir_); }),
            "data set 'fashion-mnist-binary:x': class 'x' is not an integer (Fashion-MNIST's classes are 0..9)");
  EXPECT_NE(error_of<InputError>([&] {
              load_sparse("fashion-mnist-binary:10", PresetSize::kFull, 1, dir_);
            }).find("class 10 is not one of its classes 0..9"),
            std::string::npos);
  EXPECT_THROW(load_sparse("fashion-mnist-binary", PresetSize::kFull, 1, dir_ / "nowhere"), UnavailableError);
}

}  // namespace
}  // namespace dsgd::data
