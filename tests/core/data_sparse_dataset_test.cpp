#include <gtest/gtest.h>

#include <string>

#include "core/data/sparse_dataset.hpp"
#include "core/error.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::data {
namespace {

using dsgd::testing::error_of;

// 4 rows over 10 features with 1, 3, 0 and 2 non-zeros; two positive.
SparseDataset four_rows() {
  SparseDataset data;
  data.name = "four-rows";
  data.features = 10;
  data.row_begin = {0, 1, 4, 4, 6};
  data.index = {9, 0, 4, 7, 1, 2};
  data.value = {1, 2, 3, 4, 5, 6};
  data.label = {1, -1, -1, 1};
  return data;
}

TEST(CoreDataSparseDataset, StatsAreTableIIIsColumns) {
  const SparseStats stats = sparse_stats(four_rows());
  EXPECT_EQ(stats.rows, 4U);
  EXPECT_EQ(stats.features, 10U);
  EXPECT_EQ(stats.nnz, 6U);
  EXPECT_EQ(stats.min_row_nnz, 0U);
  EXPECT_EQ(stats.max_row_nnz, 3U);
  EXPECT_DOUBLE_EQ(stats.avg_row_nnz, 1.5);
  EXPECT_DOUBLE_EQ(stats.sparse_percent, 15.0);  // 6 / (4 x 10)
  EXPECT_DOUBLE_EQ(stats.positive_fraction, 0.5);
  EXPECT_EQ(sparse_stats(SparseDataset{}).rows, 0U);
}

TEST(CoreDataSparseDataset, CheckAcceptsAValidSet) {
  EXPECT_NO_THROW(check_sparse(four_rows()));
  EXPECT_NO_THROW(check_sparse(SparseDataset{}));
}

TEST(CoreDataSparseDataset, CheckCatchesUnsortedIndices) {
  SparseDataset data = four_rows();
  data.index = {9, 0, 7, 4, 1, 2};  // row 1: 0, 7, 4
  const std::string message = error_of<InternalError>([&] { check_sparse(data); });
  EXPECT_NE(message.find("four-rows: row 1 has feature 4 after 7 (indices must strictly increase)"), std::string::npos)
      << message;
  data.index = {9, 0, 4, 4, 1, 2};  // a repeated index is not strictly increasing either
  EXPECT_NE(error_of<InternalError>([&] { check_sparse(data); }).find("feature 4 after 4"), std::string::npos);
}

TEST(CoreDataSparseDataset, CheckCatchesRangeOffsetsAndLabels) {
  SparseDataset data = four_rows();
  data.features = 9;
  EXPECT_NE(error_of<InternalError>([&] { check_sparse(data); }).find("row 0 has feature 9 >= features 9"),
            std::string::npos);
  data = four_rows();
  data.label[2] = 0;
  EXPECT_NE(error_of<InternalError>([&] { check_sparse(data); }).find("row 2 has label 0"), std::string::npos);
  data = four_rows();
  data.row_begin.back() = 5;
  error_of<InternalError>([&] { check_sparse(data); });
  data = four_rows();
  data.value.pop_back();
  error_of<InternalError>([&] { check_sparse(data); });
}

TEST(CoreDataSparseDataset, OneVsRestDropsZerosAndLabelsOneClass) {
  const Dataset images{.name = "tiny",
                       .channels = 1,
                       .height = 2,
                       .width = 2,
                       .classes = 3,
                       .images = {0.0f, 0.5f, 0.0f, 1.0f,   // class 2
                                  0.25f, 0.0f, 0.0f, 0.0f,  // class 0
                                  0.0f, 0.0f, 0.0f, 0.0f},  // class 2, all background
                       .labels = {2, 0, 2}};
  const SparseDataset data = one_vs_rest(images, 2);
  EXPECT_EQ(data.name, "tiny class 2 vs rest");
  EXPECT_EQ(data.features, 4U);
  EXPECT_EQ(data.row_begin, (std::vector<std::uint64_t>{0, 2, 3, 3}));
  EXPECT_EQ(data.index, (std::vector<std::uint32_t>{1, 3, 0}));
  EXPECT_EQ(data.value, (std::vector<float>{0.5f, 1.0f, 0.25f}));
  EXPECT_EQ(data.label, (std::vector<float>{1, -1, 1}));
  EXPECT_NO_THROW(check_sparse(data));
  EXPECT_EQ(error_of<InputError>([&] { one_vs_rest(images, 3); }), "tiny: class 3 is not one of its classes 0..2");
}

}  // namespace
}  // namespace dsgd::data
