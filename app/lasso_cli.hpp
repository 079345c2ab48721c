#pragma once
// What `dsgd lasso` and `dsgd-mpi lasso` share (app/lasso_command.cpp, app/dsgd_mpi_main.cpp): the options of a
// STRADS Lasso run (algorithms/strads/) and their forwarding to dsgd-mpi.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "algorithms/strads/lasso.hpp"

namespace dsgd::app {

struct LassoCli {
  std::string problem = "small";  // a preset, PRESET:SEED or libsvm:FILE
  double lambda = 0;              // absolute; 0: lambda_ratio x lambda_max
  double lambda_ratio = 0.05;
  std::size_t coordinates = 0;  // per round; 0: the number of workers
  algorithms::strads::LassoRunOptions run;
};

// --problem, --lambda, --lambda-ratio, --coordinates, --candidates, --tau, --rounds, --seconds, --eval-every,
// --seed on `command`, bound to `cli`.
void add_lasso_options(CLI::App& command, LassoCli& cli);
// The same options as dsgd-mpi arguments, for `scheduler` (a name) on `workers` ranks.
std::vector<std::string> lasso_arguments(const LassoCli& cli, const std::string& scheduler, int workers);
// Fills cli.run for `scheduler` on `workers` workers over `problem`: the scheduler's kind and C, and lambda.
// Throws UnknownNameError for a scheduler name, InputError for a lambda below 0.
void resolve_lasso_cli(LassoCli& cli, const std::string& scheduler, int workers,
                       const algorithms::strads::LassoProblem& problem);

}  // namespace dsgd::app
