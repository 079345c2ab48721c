#pragma once
// Seeded sampling of mini-batches: every epoch visits the dataset in a fresh random order that depends only on
// (seed, epoch), identically with every standard library and on every platform.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dsgd::data {

// The order of epoch `epoch` for a sampler seeded with `seed`: a permutation of 0 .. n-1 by Fisher-Yates with
// std::mt19937_64 (whose output sequence the C++ standard fixes) and our own unbiased bounded draws (std::shuffle
// and std::uniform_int_distribution are implementation-defined). Any epoch can be computed directly, e.g. to
// resume a run.
std::vector<std::size_t> epoch_permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch);

// Deals batches of `batch` indices in 0 .. dataset_size-1. The indices form one endless stream, the permutations
// of epoch 0, 1, 2, ... one after another, cut into consecutive batches: every batch is full, every sample appears
// exactly once per epoch, and when batch does not divide dataset_size one batch per epoch boundary holds the end
// of one epoch and the start of the next (as Caffe's data layers do).
class BatchSampler {
 public:
  // Throws InputError when dataset_size or batch is 0.
  BatchSampler(std::size_t dataset_size, std::size_t batch, std::uint64_t seed);

  // The indices of the next batch; the view stays valid until the next call.
  std::span<const std::size_t> next();

  std::size_t dataset_size() const { return dataset_size_; }
  std::size_t batch() const { return batch_.size(); }
  std::uint64_t seed() const { return seed_; }
  // The epoch the next index drawn belongs to (0 before any batch).
  std::uint64_t epoch() const { return epoch_; }
  // Batches dealt so far.
  std::uint64_t batches_drawn() const { return batches_drawn_; }
  // Continues as if `batches` batches had been dealt since construction (a resumed run): the next batch is the one
  // a fresh sampler deals after that many.
  void seek(std::uint64_t batches);

 private:
  std::size_t dataset_size_;
  std::uint64_t seed_;
  std::uint64_t epoch_ = 0;
  std::uint64_t batches_drawn_ = 0;
  std::vector<std::size_t> order_;  // the current epoch's permutation
  std::size_t position_ = 0;        // next index of order_ to deal
  std::vector<std::size_t> batch_;
};

}  // namespace dsgd::data
