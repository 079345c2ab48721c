#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/data/dataset.hpp"
#include "core/error.hpp"

namespace dsgd::data {
namespace {

// `n` images of 2 x 3 x 4: channel 0 spread over [0, 1], channel 1 a narrow band around 0.8.
Dataset two_channel(std::size_t n, std::size_t salt) {
  Dataset data{.name = "two-channel", .channels = 2, .height = 3, .width = 4, .classes = 3, .images = {}, .labels = {}};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < 12; ++k) {
      data.images.push_back(static_cast<float>((i * 7 + k * 3 + salt) % 256) / 255.0f);
    }
    for (std::size_t k = 0; k < 12; ++k) {
      data.images.push_back(0.8f + 0.01f * static_cast<float>((i + k * 5 + salt) % 11));
    }
    data.labels.push_back(static_cast<std::int32_t>(i % 3));
  }
  return data;
}

// Direct per-channel mean and population standard deviation in double.
std::vector<std::pair<double, double>> direct_stats(const Dataset& data) {
  std::vector<std::pair<double, double>> out;
  const std::size_t plane = data.image_size() / static_cast<std::size_t>(data.channels);
  for (std::size_t c = 0; c < static_cast<std::size_t>(data.channels); ++c) {
    double sum = 0;
    double sum_sq = 0;
    for (std::size_t i = 0; i < data.size(); ++i) {
      for (const float v : data.image(i).subspan(c * plane, plane)) {
        sum += v;
        sum_sq += static_cast<double>(v) * v;
      }
    }
    const double count = static_cast<double>(data.size() * plane);
    const double mean = sum / count;
    out.emplace_back(mean, std::sqrt(sum_sq / count - mean * mean));
  }
  return out;
}

TEST(CoreDataDataset, ChannelStatsMatchDirectComputation) {
  const Dataset data = two_channel(500, 0);
  const ChannelStats stats = channel_stats(data);
  const auto expected = direct_stats(data);
  ASSERT_EQ(stats.mean.size(), 2U);
  for (std::size_t c = 0; c < 2; ++c) {
    EXPECT_NEAR(stats.mean[c], expected[c].first, 1e-9) << c;
    EXPECT_NEAR(stats.stddev[c], expected[c].second, 1e-9) << c;
  }
}

TEST(CoreDataDataset, TrainStatisticsNormaliseTrainAndTest) {
  Dataset train = two_channel(500, 0);
  Dataset test = two_channel(100, 13);
  const Dataset raw_test = test;
  const ChannelStats stats = normalize_with_train_stats(train, test);

  // Expectation: mean 0 and variance 1 per channel on the training set (seed 000 Algorithm 1 line 1).
  const auto after = direct_stats(train);
  for (std::size_t c = 0; c < 2; ++c) {
    EXPECT_NEAR(after[c].first, 0.0, 1e-5) << c;
    EXPECT_NEAR(after[c].second * after[c].second, 1.0, 1e-4) << c;
  }
  // The test set is shifted and scaled by the *training* statistics, not its own.
  const std::size_t plane = 12;
  for (const std::size_t k : {std::size_t{0}, std::size_t{5}, std::size_t{13}, std::size_t{23}}) {
    const std::size_t c = k / plane;
    const double expected = (raw_test.images[k] - stats.mean[c]) / stats.stddev[c];
    EXPECT_NEAR(test.images[k], expected, 1e-5) << k;
  }
}

TEST(CoreDataDataset, ConstantChannelIsOnlyCentred) {
  Dataset data = two_channel(10, 0);
  for (std::size_t i = 0; i < data.size(); ++i) {
    for (std::size_t k = 12; k < 24; ++k) data.images[i * 24 + k] = 0.5f;
  }
  const ChannelStats stats = channel_stats(data);
  EXPECT_EQ(stats.stddev[1], 0.0);
  normalize(data, stats);
  for (std::size_t k = 12; k < 24; ++k) EXPECT_EQ(data.images[k], 0.0f);
}

TEST(CoreDataDataset, MismatchedStatisticsAndEmptyDataAreInputErrors) {
  Dataset data = two_channel(4, 0);
  EXPECT_THROW(normalize(data, ChannelStats{{0.5}, {1.0}}), InputError);
  Dataset empty;
  empty.name = "empty";
  empty.channels = 1;
  EXPECT_THROW(channel_stats(empty), InputError);
}

TEST(CoreDataDataset, FillBatchCopiesImagesAndFloatLabels) {
  const Dataset data = two_channel(5, 0);
  const std::vector<std::size_t> indices = {4, 0, 4};
  std::vector<float> images(std::size_t{3} * 24, -1.0f);
  std::vector<float> labels(3, -1.0f);
  fill_batch(data, indices, images, labels);
  for (std::size_t b = 0; b < 3; ++b) {
    const auto source = data.image(indices[b]);
    EXPECT_TRUE(std::equal(source.begin(), source.end(), images.begin() + static_cast<std::ptrdiff_t>(b * 24))) << b;
  }
  EXPECT_EQ(labels, (std::vector<float>{1.0f, 0.0f, 1.0f}));
  // Wrong buffer sizes and indices are the caller's bug.
  std::vector<float> short_images(std::size_t{2} * 24);
  EXPECT_THROW(fill_batch(data, indices, short_images, labels), InternalError);
  const std::vector<std::size_t> outside = {5};
  std::vector<float> one_image(24);
  std::vector<float> one_label(1);
  EXPECT_THROW(fill_batch(data, outside, one_image, one_label), InternalError);
}

TEST(CoreDataDataset, LabelsAsFloatsAndClassCounts) {
  const Dataset data = two_channel(7, 0);
  EXPECT_EQ(data.float_labels(), (std::vector<float>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(data.class_counts(), (std::vector<std::size_t>{3, 2, 2}));
}

}  // namespace
}  // namespace dsgd::data
