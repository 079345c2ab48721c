#pragma once
// Verifiable collective inputs, after nccl-tests' verifiable/verifiable.h: rank r holds (r + 1) * (i % 13 + 1) at
// element i, small integers in float, so a sum over n ranks is (i % 13 + 1) * n (n + 1) / 2 exactly, whatever the
// order of the additions (for n up to 1600, where the sums stay below 2^24). A result that differs is a bug, not
// rounding. dsgd-mpi's allreduce sweep and every executor's collective tests (tests/core/collective_checks.hpp)
// check with these.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace dsgd::verifiable {

// Rank `rank`'s input at element `i`.
inline float input_value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1));
}

// The sum of input_value(r, i) over ranks r = 0 .. ranks - 1.
inline float sum_value(int ranks, std::size_t i) {
  return static_cast<float>(static_cast<int>(i % 13 + 1) * ranks * (ranks + 1) / 2);
}

// Fills `values` with rank `rank`'s inputs.
inline void fill_inputs(std::span<float> values, int rank) {
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = input_value(rank, i);
}

// `count` inputs of rank `rank`.
inline std::vector<float> inputs(int rank, std::size_t count) {
  std::vector<float> values(count);
  fill_inputs(values, rank);
  return values;
}

// Throws InternalError "<what> on N floats: element I is X, expected Y" at the first element of `values` that is not
// the sum over `ranks` ranks.
inline void check_sums(std::span<const float> values, int ranks, const std::string& what) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] != sum_value(ranks, i)) {
      throw InternalError(what + " on " + std::to_string(values.size()) + " floats: element " + std::to_string(i) +
                          " is " + std::to_string(values[i]) + ", expected " + std::to_string(sum_value(ranks, i)));
    }
  }
}

}  // namespace dsgd::verifiable
