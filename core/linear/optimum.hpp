#pragma once
// The optimum of the L2-regularised logistic-regression objective F (core/linear/logistic.hpp), the yardstick of
// seed 003's "closeness to the optimal loss". Seed 003 used L-BFGS; we use liblinear's primal trust-region Newton
// solver (-s 0, L2R_LR), which reaches a tighter optimum in a few iterations. liblinear minimises
//   f(w) = |w|^2 / 2 + C sum_i log(1 + exp(-y_i w.x_i))
// which, with C = 1 / (lambda n) and no bias term, is F / lambda: the same minimiser.

#include <string>
#include <vector>

#include "core/linear/logistic.hpp"

namespace dsgd::linear {

struct Optimum {
  double objective = 0;            // F(w*) by objective() (double sums over the float w* below)
  std::vector<float> w;            // w*, data.features entries, +1 meaning "towards label +1"
  double liblinear_objective = 0;  // f(w*) in liblinear's scale, computed in double over liblinear's double w*
  double C = 0;                    // 1 / (lambda n)
  double eps = 0;                  // liblinear's stopping tolerance (relative gradient norm)
  int iterations = 0;              // Newton (trust-region) iterations liblinear reported
  bool converged = true;           // false when liblinear stopped at its iteration limit
  double train_s = 0;              // wall time of liblinear's train()
  std::string solver;              // "liblinear 2.30 L2R_LR (primal trust-region Newton)"
};

// Trains liblinear L2R_LR on `problem` (bias off, C = 1 / (lambda n), tolerance `eps`, liblinear's printing
// captured instead of going to stdout) and evaluates F at its w*. Single-threaded; liblinear holds a copy of the
// data at 16 bytes per non-zero. Throws InputError when liblinear rejects the parameters (eps <= 0).
Optimum optimum(const Problem& problem, double eps = 1e-6);

}  // namespace dsgd::linear
