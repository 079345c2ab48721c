#include "core/data/sampler.hpp"

#include <random>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/splitmix.hpp"

namespace dsgd::data {
namespace {

// Uniform in [0, bound): rejects the lowest 2^64 mod bound raw values so every residue is equally likely.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound, computed in 64 bits
  for (;;) {
    const std::uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

std::vector<std::size_t> epoch_permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(splitmix64(splitmix64(seed) + epoch));
  // Fisher-Yates from the back: position i takes a uniform pick among the i + 1 not yet placed.
  for (std::size_t i = n; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(uniform_below(rng, i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

BatchSampler::BatchSampler(std::size_t dataset_size, std::size_t batch, std::uint64_t seed)
    : dataset_size_(dataset_size), seed_(seed), batch_(batch) {
  if (dataset_size == 0) throw InputError("batch sampler: the dataset is empty");
  if (batch == 0) throw InputError("batch sampler: batch size must be at least 1, got 0");
  order_ = epoch_permutation(dataset_size_, seed_, epoch_);
}

void BatchSampler::seek(std::uint64_t batches) {
  // The stream of indices is the epochs' permutations end to end, and next() moves on to the next epoch as soon as
  // one is used up: after t indices the epoch is t / n and the position t % n.
  const std::uint64_t indices = batches * batch_.size();
  epoch_ = indices / dataset_size_;
  position_ = static_cast<std::size_t>(indices % dataset_size_);
  order_ = epoch_permutation(dataset_size_, seed_, epoch_);
  batches_drawn_ = batches;
}

std::span<const std::size_t> BatchSampler::next() {
  for (std::size_t& index : batch_) {
    index = order_[position_++];
    // Move on as soon as an epoch is used up (position_ < order_.size() always holds), so epoch() names the
    // epoch of the next index.
    if (position_ == order_.size()) {
      ++epoch_;
      order_ = epoch_permutation(dataset_size_, seed_, epoch_);
      position_ = 0;
    }
  }
  ++batches_drawn_;
  return batch_;
}

}  // namespace dsgd::data
