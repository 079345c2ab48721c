#pragma once
// What `dsgd bench gemm` and `dsgd-mpi gemm` share (app/bench_command.cpp, app/dsgd_mpi_main.cpp): the options of
// the distributed GEMM benchmark (algorithms/dmath/gemm_bench.hpp) and their forwarding to dsgd-mpi.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "algorithms/dmath/gemm_bench.hpp"
#include "reports/results.hpp"

namespace dsgd::app {

// One benchmark point's options (its size is set per point) and the list of sizes, as both programs take them.
struct GemmCli {
  algorithms::dmath::GemmBenchOptions bench;
  std::vector<std::int64_t> sizes = {1024, 2048, 4096};
  std::string algorithm = "cyclic";
};

// --algorithm, --sizes, --rounds, --panels, --panel-width, --threads-per-rank, --no-cache, --transposed,
// --no-verify, --seed on `command`, bound to `cli`.
void add_gemm_options(CLI::App& command, GemmCli& cli);
// The same options as dsgd-mpi arguments, for one algorithm and the sizes of `cli`.
std::vector<std::string> gemm_arguments(const GemmCli& cli);
// Reads cli.algorithm into cli.bench.algorithm (UnknownNameError) and checks sizes are given.
void resolve_gemm_cli(GemmCli& cli);

}  // namespace dsgd::app
