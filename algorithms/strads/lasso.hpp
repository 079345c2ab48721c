#pragma once
// Lasso by coordinate descent as a SchMP program (seed 003 Algorithm 2; docs/strads.md): the rows of X and y are
// split over the workers, each keeping its rows' residual r = y - X beta and a copy of beta. For a scheduled set S
// every worker p computes R_p[a] = x_a^p . r^p + |x_a^p|^2 beta_a over its rows; the aggregator sets
// beta_a = S(sum_p R_p[a], lambda) (columns have unit norm) for every a in S at once, from the same residual; the
// workers then update their residuals by the changes. With one coordinate per round it is sequential coordinate
// descent; with several, how far it is from that depends on how correlated the set's columns are.

#include <cstdint>
#include <vector>

#include "algorithms/strads/lasso_problem.hpp"
#include "algorithms/strads/schedule.hpp"
#include "algorithms/strads/schmp.hpp"
#include "core/comm.hpp"

namespace dsgd::algorithms::strads {

struct LassoRunOptions {
  SchedulerOptions scheduler;
  double lambda = 0;  // absolute (callers derive it from lambda_max)
  SchmpOptions schmp;
};

struct LassoRunResult {
  SchmpResult run;                     // the rounds, curve (rank 0) and stop reason
  std::vector<double> beta;            // rank 0: the final beta
  std::vector<std::uint64_t> updates;  // rank 0: how often each coordinate was updated
};

// Every rank passes the whole problem (rank 0's scheduler reads its columns; each worker keeps its rows). Throws
// InputError for lambda < 0 and the scheduler's errors.
LassoRunResult run_lasso(Comm& comm, const LassoProblem& problem, const LassoRunOptions& options);

}  // namespace dsgd::algorithms::strads
