#include "core/data/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace dsgd::data {

std::vector<float> Dataset::float_labels() const { return std::vector<float>(labels.begin(), labels.end()); }

std::vector<std::size_t> Dataset::class_counts() const {
  std::vector<std::size_t> counts(static_cast<std::size_t>(std::max(classes, 0)), 0);
  for (const std::int32_t label : labels) {
    DSGD_ENFORCE(label >= 0 && label < classes, name + ": label out of range");
    ++counts[static_cast<std::size_t>(label)];
  }
  return counts;
}

ChannelStats channel_stats(const Dataset& data) {
  if (data.size() == 0 || data.image_size() == 0) throw InputError(data.name + ": no images to compute statistics on");
  DSGD_ENFORCE_EQ(data.images.size(), data.size() * data.image_size());
  const std::size_t channels = static_cast<std::size_t>(data.channels);
  const std::size_t plane = data.image_size() / channels;
  const double count = static_cast<double>(data.size() * plane);
  ChannelStats stats{std::vector<double>(channels, 0.0), std::vector<double>(channels, 0.0)};
  // Two passes (mean, then squared deviations) in double: the one-pass E[x^2] - E[x]^2 loses digits when the mean
  // is large against the spread. `omp simd` (dsgd_core builds with -fopenmp-simd) lets the per-plane sums
  // vectorise; the order is fixed per build, so the statistics are reproducible.
  for (std::size_t i = 0; i < data.size(); ++i) {
    const float* image = data.images.data() + i * data.image_size();
    for (std::size_t c = 0; c < channels; ++c) {
      double sum = 0.0;
      const float* p = image + c * plane;
#pragma omp simd reduction(+ : sum)
      for (std::size_t k = 0; k < plane; ++k) sum += p[k];
      stats.mean[c] += sum;
    }
  }
  for (double& m : stats.mean) m /= count;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const float* image = data.images.data() + i * data.image_size();
    for (std::size_t c = 0; c < channels; ++c) {
      const double mean = stats.mean[c];
      double sum = 0.0;
      const float* p = image + c * plane;
#pragma omp simd reduction(+ : sum)
      for (std::size_t k = 0; k < plane; ++k) {
        const double d = p[k] - mean;
        sum += d * d;
      }
      stats.stddev[c] += sum;
    }
  }
  for (double& s : stats.stddev) s = std::sqrt(s / count);
  return stats;
}

void normalize(Dataset& data, const ChannelStats& stats) {
  const std::size_t channels = static_cast<std::size_t>(data.channels);
  if (stats.mean.size() != channels || stats.stddev.size() != channels) {
    throw InputError(data.name + ": normalisation statistics have " + std::to_string(stats.mean.size()) +
                     " channels, the images " + std::to_string(channels));
  }
  if (channels == 0) return;
  const std::size_t plane = data.image_size() / channels;
  std::vector<float> shift(channels);
  std::vector<float> scale(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    shift[c] = static_cast<float>(stats.mean[c]);
    // A constant channel carries no information; dividing by 0 would turn it into NaN.
    scale[c] = stats.stddev[c] > 0.0 ? static_cast<float>(1.0 / stats.stddev[c]) : 1.0f;
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    float* image = data.images.data() + i * data.image_size();
    for (std::size_t c = 0; c < channels; ++c) {
      float* p = image + c * plane;
      const float a = shift[c];
      const float b = scale[c];
      for (std::size_t k = 0; k < plane; ++k) p[k] = (p[k] - a) * b;
    }
  }
}

ChannelStats normalize_with_train_stats(Dataset& train, Dataset& test) {
  if (train.channels != test.channels || train.height != test.height || train.width != test.width) {
    throw InputError(test.name + ": images are " + std::to_string(test.channels) + "x" + std::to_string(test.height) +
                     "x" + std::to_string(test.width) + " but " + train.name + " has " +
                     std::to_string(train.channels) + "x" + std::to_string(train.height) + "x" +
                     std::to_string(train.width));
  }
  ChannelStats stats = channel_stats(train);
  normalize(train, stats);
  normalize(test, stats);
  return stats;
}

void fill_batch(const Dataset& data, std::span<const std::size_t> indices, std::span<float> images,
                std::span<float> labels) {
  const std::size_t stride = data.image_size();
  DSGD_ENFORCE_EQ(images.size(), indices.size() * stride);
  DSGD_ENFORCE_EQ(labels.size(), indices.size());
  for (std::size_t b = 0; b < indices.size(); ++b) {
    const std::size_t i = indices[b];
    DSGD_ENFORCE_LT(i, data.size());
    std::memcpy(images.data() + b * stride, data.images.data() + i * stride, stride * sizeof(float));
    labels[b] = static_cast<float>(data.labels[i]);
  }
}

}  // namespace dsgd::data
