#pragma once
// L2-regularised logistic regression, the objective of seed 003's study (and liblinear's -s 0,
// core/linear/optimum.hpp):
//   F(w) = (1/n) sum_i log(1 + exp(-y_i w.x_i)) + (lambda / 2) |w|^2,   lambda = 1/n by default (seed 003).
// liblinear minimises f(w) = |w|^2 / 2 + C sum_i log(1 + exp(-y_i w.x_i)); with C = 1 / (lambda n) the two have the
// same minimiser and f = F / lambda. Sums in double, losses with a stable log(1 + exp(.)).

#include <cstddef>
#include <span>

#include "core/data/sparse_dataset.hpp"

namespace dsgd::linear {

struct Problem {
  const data::SparseDataset* data = nullptr;
  double lambda = 0;  // the L2 weight; 0 in `problem()` means 1 / rows
};
// The problem of `data` with lambda (0: 1 / rows).
Problem problem(const data::SparseDataset& data, double lambda = 0);

// log(1 + exp(-margin)) without overflow.
double logistic_loss(double margin);
// d/d(margin) of logistic_loss: -1 / (1 + exp(margin)).
double logistic_slope(double margin);

// w . x_row
float dot_row(const data::SparseDataset& data, std::size_t row, std::span<const float> w);

// F(w) over the whole set.
double objective(const Problem& problem, std::span<const float> w);

// Seed 003's closeness to the optimum, in percent: (2 - |current| / |optimal|) x 100; 99.5 means within 0.5%.
double closeness_percent(double current, double optimal);

}  // namespace dsgd::linear
