#include "core/linear/logistic.hpp"

#include <cmath>

#include "core/error.hpp"

namespace dsgd::linear {

Problem problem(const data::SparseDataset& data, double lambda) {
  if (data.rows() == 0) throw InputError(data.name + ": the data set has no rows");
  return Problem{&data, lambda > 0 ? lambda : 1.0 / static_cast<double>(data.rows())};
}

double logistic_loss(double margin) {
  // log(1 + e^-m): for m >= 0 e^-m <= 1 cannot overflow; for m < 0 factor e^-m out: -m + log(1 + e^m).
  return margin >= 0 ? std::log1p(std::exp(-margin)) : -margin + std::log1p(std::exp(margin));
}

double logistic_slope(double margin) {
  // -1 / (1 + e^m) = -e^-m / (1 + e^-m); each form's exponential stays <= 1 on its side, so neither overflows.
  if (margin >= 0) {
    const double e = std::exp(-margin);
    return -e / (1.0 + e);
  }
  return -1.0 / (1.0 + std::exp(margin));
}

float dot_row(const data::SparseDataset& data, std::size_t row, std::span<const float> w) {
  const auto indices = data.row_index(row);
  const auto values = data.row_value(row);
  float sum = 0;
  for (std::size_t k = 0; k < indices.size(); ++k) sum += values[k] * w[indices[k]];
  return sum;
}

double objective(const Problem& problem, std::span<const float> w) {
  DSGD_ENFORCE(problem.data != nullptr, "the problem has no data");
  const data::SparseDataset& data = *problem.data;
  DSGD_ENFORCE_GE(w.size(), data.features);
  // Dot products in double too: F is the yardstick that decides 99.5% closeness, so it must not carry float
  // rounding of the model's own precision on rows with thousands of non-zeros.
  double loss_sum = 0;
  for (std::size_t row = 0; row < data.rows(); ++row) {
    const auto indices = data.row_index(row);
    const auto values = data.row_value(row);
    double dot = 0;
    for (std::size_t k = 0; k < indices.size(); ++k) dot += double{values[k]} * double{w[indices[k]]};
    loss_sum += logistic_loss(double{data.label[row]} * dot);
  }
  // Only the model's first `features` entries are regularised: a caller may pad w (SIMD, cache lines) with zeros.
  double norm2 = 0;
  for (std::size_t f = 0; f < data.features; ++f) norm2 += double{w[f]} * double{w[f]};
  return loss_sum / static_cast<double>(data.rows()) + 0.5 * problem.lambda * norm2;
}

double closeness_percent(double current, double optimal) {
  DSGD_ENFORCE(optimal != 0, "closeness to an optimum of 0 is undefined");
  return (2.0 - std::abs(current) / std::abs(optimal)) * 100.0;
}

}  // namespace dsgd::linear
