#include "algorithms/shared_memory/staleness.hpp"

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

// Rows of one table in SharingScheme's order: serial, Hogwild, mini-batch, HogBatch.
using StalenessRows = std::array<StalenessBounds, 4>;

// T and B of the formulas, checked.
std::pair<std::uint64_t, std::uint64_t> threads_and_batch(int threads, int batch) {
  if (threads < 1) throw InputError("staleness formula: threads must be at least 1, got " + std::to_string(threads));
  if (batch < 1) throw InputError("staleness formula: batch size must be at least 1, got " + std::to_string(batch));
  return {static_cast<std::uint64_t>(threads), static_cast<std::uint64_t>(batch)};
}

StalenessBounds row_of(std::string_view table, SharingScheme scheme, const StalenessRows& rows) {
  const auto index = static_cast<std::size_t>(scheme);
  if (index >= rows.size()) throw InternalError(std::string(table) + ": unknown sharing scheme");
  return rows[index];
}

}  // namespace

StalenessBounds table1_staleness(SharingScheme scheme, int threads, int batch) {
  const auto [t, b] = threads_and_batch(threads, batch);
  return row_of("table1_staleness", scheme, {{{0, 0}, {0, t - 1}, {b, b}, {b, t * b}}});
}

StalenessBounds table2_staleness(SharingScheme scheme, int threads, int batch) {
  const auto [t, b] = threads_and_batch(threads, batch);
  return row_of("table2_staleness", scheme, {{{0, 0}, {0, t - 1}, {b - b / t, b - b / t}, {0, t * b - b}}});
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
