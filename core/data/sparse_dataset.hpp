#pragma once
// A sparse labelled data set for linear models (seed 003's logistic regression): rows in compressed sparse row form
// (CSR), 0-based feature indices strictly increasing within a row, labels -1 or +1 (a regression file read with
// LibsvmOptions::regression holds real targets instead; check_sparse refuses those). Read from LIBSVM files
// (core/data/libsvm.hpp), generated to the shape of seed 003 Table III (core/data/sparse_presets.hpp), or made from
// an image set as one class against the rest (one_vs_rest).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/data/dataset.hpp"

namespace dsgd::data {

struct SparseDataset {
  std::string name;
  std::size_t features = 0;                 // the model's dimension d (every index < features)
  std::vector<std::uint64_t> row_begin{0};  // rows() + 1 offsets into index/value
  std::vector<std::uint32_t> index;         // 0-based feature indices, strictly increasing within a row
  std::vector<float> value;                 // the non-zeros
  std::vector<float> label;                 // one per row: -1 or +1

  std::size_t rows() const { return label.size(); }
  std::size_t nnz() const { return index.size(); }
  std::span<const std::uint32_t> row_index(std::size_t row) const {
    return {index.data() + row_begin[row], index.data() + row_begin[row + 1]};
  }
  std::span<const float> row_value(std::size_t row) const {
    return {value.data() + row_begin[row], value.data() + row_begin[row + 1]};
  }
};

// Seed 003 Table III's columns for a data set.
struct SparseStats {
  std::size_t rows = 0;
  std::size_t features = 0;
  std::size_t nnz = 0;
  std::size_t min_row_nnz = 0;
  std::size_t max_row_nnz = 0;
  double sparse_percent = 0;  // nnz / (rows x features) x 100
  double avg_row_nnz = 0;     // nnz / rows
  double positive_fraction = 0;
};
SparseStats sparse_stats(const SparseDataset& data);

// Throws InternalError unless `data` keeps the invariants above (offsets, sorted in-range indices, labels +-1).
void check_sparse(const SparseDataset& data);

// An image set as a dense binary task: `positive` against every other class, pixels as features (zeros dropped).
// Throws InputError for a class outside the set's classes.
SparseDataset one_vs_rest(const Dataset& images, int positive);

}  // namespace dsgd::data
