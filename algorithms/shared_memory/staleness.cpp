#include "algorithms/shared_memory/staleness.hpp"

#include <string>

#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

void check_sizes(int threads, int batch) {
  if (threads < 1) throw InputError("staleness formula: threads must be at least 1, got " + std::to_string(threads));
  if (batch < 1) throw InputError("staleness formula: batch size must be at least 1, got " + std::to_string(batch));
}

}  // namespace

StalenessBounds table1_staleness(SharingScheme scheme, int threads, int batch) {
  check_sizes(threads, batch);
  const auto t = static_cast<std::uint64_t>(threads);
  const auto b = static_cast<std::uint64_t>(batch);
  switch (scheme) {
    case SharingScheme::kSerial:
      return {0, 0};
    case SharingScheme::kHogwild:
      return {0, t - 1};
    case SharingScheme::kMiniBatch:
      return {b, b};
    case SharingScheme::kHogBatch:
      return {b, t * b};
  }
  throw InternalError("table1_staleness: unknown sharing scheme");
}

StalenessBounds table2_staleness(SharingScheme scheme, int threads, int batch) {
  check_sizes(threads, batch);
  const auto t = static_cast<std::uint64_t>(threads);
  const auto b = static_cast<std::uint64_t>(batch);
  switch (scheme) {
    case SharingScheme::kSerial:
      return {0, 0};
    case SharingScheme::kHogwild:
      return {0, t - 1};
    case SharingScheme::kMiniBatch:
      return {b - b / t, b - b / t};
    case SharingScheme::kHogBatch:
      return {0, t * b - b};
  }
  throw InternalError("table2_staleness: unknown sharing scheme");
}

StalenessRecorder::StalenessRecorder(int threads) {
  if (threads < 1) throw InputError("staleness recorder: threads must be at least 1, got " + std::to_string(threads));
  tallies_.resize(static_cast<std::size_t>(threads));
}

StalenessHistogram StalenessRecorder::merged() const {
  StalenessHistogram histogram;
  histogram.buckets.assign(kBuckets, 0);
  std::uint64_t min = UINT64_MAX;
  double sum = 0;
  for (const Tally& tally : tallies_) {
    histogram.count += tally.count;
    sum += static_cast<double>(tally.sum);
    if (tally.count > 0 && tally.min < min) min = tally.min;
    if (tally.max > histogram.max) histogram.max = tally.max;
    for (int b = 0; b < kBuckets; ++b) histogram.buckets[static_cast<std::size_t>(b)] += tally.buckets[b];
  }
  if (histogram.count > 0) {
    histogram.min = min;
    histogram.mean = sum / static_cast<double>(histogram.count);
  }
  while (!histogram.buckets.empty() && histogram.buckets.back() == 0) histogram.buckets.pop_back();
  return histogram;
}

}  // namespace dsgd::algorithms::shared_memory
