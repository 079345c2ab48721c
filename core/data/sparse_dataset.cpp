#include "core/data/sparse_dataset.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace dsgd::data {

SparseStats sparse_stats(const SparseDataset& data) {
  SparseStats stats;
  stats.rows = data.rows();
  stats.features = data.features;
  stats.nnz = data.nnz();
  if (stats.rows == 0) return stats;
  stats.min_row_nnz = std::numeric_limits<std::size_t>::max();
  std::size_t positives = 0;
  for (std::size_t row = 0; row < stats.rows; ++row) {
    const auto count = static_cast<std::size_t>(data.row_begin[row + 1] - data.row_begin[row]);
    stats.min_row_nnz = std::min(stats.min_row_nnz, count);
    stats.max_row_nnz = std::max(stats.max_row_nnz, count);
    if (data.label[row] > 0) ++positives;
  }
  const auto rows = static_cast<double>(stats.rows);
  stats.avg_row_nnz = static_cast<double>(stats.nnz) / rows;
  if (stats.features > 0) stats.sparse_percent = stats.avg_row_nnz / static_cast<double>(stats.features) * 100.0;
  stats.positive_fraction = static_cast<double>(positives) / rows;
  return stats;
}

void check_sparse(const SparseDataset& data) {
  const std::size_t rows = data.rows();
  DSGD_ENFORCE_EQ(data.row_begin.size(), rows + 1);
  DSGD_ENFORCE_EQ(data.row_begin.front(), std::uint64_t{0});
  DSGD_ENFORCE_EQ(data.row_begin.back(), static_cast<std::uint64_t>(data.nnz()));
  DSGD_ENFORCE_EQ(data.value.size(), data.index.size());
  for (std::size_t row = 0; row < rows; ++row) {
    DSGD_ENFORCE_LE(data.row_begin[row], data.row_begin[row + 1]);
    const auto indices = data.row_index(row);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      if (indices[k] >= data.features) {
        DSGD_ENFORCE(false, data.name + ": row " + std::to_string(row) + " has feature " + std::to_string(indices[k]) +
                                " >= features " + std::to_string(data.features));
      }
      if (k > 0 && indices[k] <= indices[k - 1]) {
        DSGD_ENFORCE(false, data.name + ": row " + std::to_string(row) + " has feature " + std::to_string(indices[k]) +
                                " after " + std::to_string(indices[k - 1]) + " (indices must strictly increase)");
      }
    }
    if (data.label[row] != 1.0f && data.label[row] != -1.0f) {
      DSGD_ENFORCE(false, data.name + ": row " + std::to_string(row) + " has label " + std::to_string(data.label[row]) +
                              " (expected -1 or +1)");
    }
  }
}

SparseDataset one_vs_rest(const Dataset& images, int positive) {
  if (positive < 0 || positive >= images.classes) {
    throw InputError(images.name + ": class " + std::to_string(positive) + " is not one of its classes 0.." +
                     std::to_string(images.classes - 1));
  }
  SparseDataset out;
  out.name = images.name + " class " + std::to_string(positive) + " vs rest";
  out.features = images.image_size();
  out.label.reserve(images.size());
  out.row_begin.reserve(images.size() + 1);
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto pixels = images.image(i);
    // Zeros are dropped: Fashion-MNIST's background is exactly 0, about half of every image.
    for (std::size_t f = 0; f < pixels.size(); ++f) {
      if (pixels[f] != 0.0f) {
        out.index.push_back(static_cast<std::uint32_t>(f));
        out.value.push_back(pixels[f]);
      }
    }
    out.row_begin.push_back(out.index.size());
    out.label.push_back(images.labels[i] == positive ? 1.0f : -1.0f);
  }
  return out;
}

}  // namespace dsgd::data
