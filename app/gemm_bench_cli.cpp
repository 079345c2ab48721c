#include "app/gemm_bench_cli.hpp"

#include "app/run_common.hpp"

namespace dsgd::app {

namespace dmath = algorithms::dmath;

void add_gemm_options(CLI::App& command, GemmCli& cli) {
  auto& bench = cli.bench;
  command.add_option("--algorithm", cli.algorithm, "cyclic (dMath's 1-D rolling) or summa (2-D broadcasts)")
      ->capture_default_str();
  command.add_option("--sizes", cli.sizes, "Square sizes m = n = k")->delimiter(',')->capture_default_str();
  command.add_option("--rounds", bench.rounds, "Timed products per point, after one warm-up")->capture_default_str();
  command.add_option("--panels", bench.gemm.panels, "cyclic: column panels per rolled block (pipeline stages)")
      ->capture_default_str();
  command.add_option("--panel-width", bench.gemm.panel_width, "summa: inner-dimension columns per broadcast step")
      ->capture_default_str();
  command.add_option("--threads-per-rank", bench.threads_per_rank, "OpenBLAS threads of each rank's products")
      ->capture_default_str();
  command.add_flag("--no-cache{false}", bench.cache, "cyclic: do not keep the rotated blocks");
  command.add_flag("--transposed", bench.transposed,
                   "cyclic: also time D = C Bᵀ after each product (the backward pass; from the kept blocks)");
  command.add_flag("--no-verify{false}", bench.verify, "Skip the check against a single-rank sgemm");
  command.add_flag("--fp16", bench.gemm.half_transfer,
                   "cyclic: B's panels travel as half precision, products stay fp32 (seed 001 sec. IX)");
  command.add_option("--seed", bench.seed, "Seed of the matrices")->capture_default_str();
}

void resolve_gemm_cli(GemmCli& cli) {
  cli.bench.algorithm = dmath::gemm_algorithm_from_string(cli.algorithm);
  if (cli.sizes.empty()) throw InputError("gemm: --sizes names no size");
}

std::vector<std::string> gemm_arguments(const GemmCli& cli) {
  const auto& bench = cli.bench;
  std::string sizes;
  for (const auto size : cli.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(size);
  std::vector<std::string> arguments = {"--algorithm",
                                        cli.algorithm,
                                        "--sizes",
                                        sizes,
                                        "--rounds",
                                        std::to_string(bench.rounds),
                                        "--panels",
                                        std::to_string(bench.gemm.panels),
                                        "--panel-width",
                                        std::to_string(bench.gemm.panel_width),
                                        "--threads-per-rank",
                                        std::to_string(bench.threads_per_rank),
                                        "--seed",
                                        std::to_string(bench.seed)};
  if (!bench.cache) arguments.emplace_back("--no-cache");
  if (bench.transposed) arguments.emplace_back("--transposed");
  if (!bench.verify) arguments.emplace_back("--no-verify");
  if (bench.gemm.half_transfer) arguments.emplace_back("--fp16");
  return arguments;
}

}  // namespace dsgd::app
