#include "app/gemm_bench_cli.hpp"

#include <algorithm>

#include "app/run_common.hpp"
#include "core/stats.hpp"

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

reports::Entry gemm_entry(const dmath::GemmBenchOptions& options, const std::vector<dmath::GemmRankResult>& ranks,
                          const std::string& executor, const std::string& fidelity, const std::string& local_gemm) {
  if (ranks.empty()) throw InternalError("gemm_entry: no rank results");
  // Per round the slowest rank's time: the product is done when its last block is.
  const auto slowest = [&](auto member) {
    std::vector<double> rounds((ranks.front().*member).size(), 0.0);
    for (const auto& rank : ranks) {
      for (std::size_t i = 0; i < rounds.size() && i < (rank.*member).size(); ++i)
        rounds[i] = std::max(rounds[i], (rank.*member)[i]);
    }
    return rounds;
  };
  const auto products = slowest(&dmath::GemmRankResult::product_s);
  const double seconds = median(products);
  const std::string algorithm(dmath::to_string(options.algorithm));
  reports::Entry entry = timed_entry("gemm/" + algorithm + "/" + std::to_string(options.size), executor, fidelity,
                                     algorithm, static_cast<int>(ranks.size()), seconds);
  entry.iterations = static_cast<std::int64_t>(products.size());
  entry.seed = options.seed;
  const double flops = dmath::GemmShape{options.size, options.size, options.size}.flops();
  double bytes = 0;
  double transposed_bytes = 0;
  double relative_error = 0;
  double transposed_relative_error = 0;
  for (const auto& rank : ranks) {
    bytes = std::max(bytes, rank.bytes_sent);
    transposed_bytes = std::max(transposed_bytes, rank.transposed_bytes_sent);
    if (rank.error_scale > 0) relative_error = std::max(relative_error, rank.max_abs_error / rank.error_scale);
    if (rank.transposed_error_scale > 0) {
      transposed_relative_error =
          std::max(transposed_relative_error, rank.transposed_max_abs_error / rank.transposed_error_scale);
    }
  }
  entry.counters = {{"size", static_cast<double>(options.size)},
                    {"flops", flops},
                    {"seconds", seconds},
                    {"seconds_min", *std::min_element(products.begin(), products.end())},
                    {"gflops", seconds > 0 ? flops / seconds / 1e9 : 0},
                    {"bytes_sent_per_rank", bytes},
                    {"panels", static_cast<double>(options.gemm.panels)},
                    {"threads_per_rank", static_cast<double>(options.threads_per_rank)}};
  if (options.verify && fidelity == "measured") {
    entry.counters["relative_error"] = relative_error;
    entry.counters["error_bound"] = dmath::gemm_error_bound(options.gemm);
  }
  if (options.transposed) {
    const auto transposed = slowest(&dmath::GemmRankResult::transposed_s);
    entry.counters["transposed_seconds"] = median(transposed);
    entry.counters["transposed_bytes_sent_per_rank"] = transposed_bytes;
    if (options.verify && fidelity == "measured")
      entry.counters["transposed_relative_error"] = transposed_relative_error;
  }
  entry.algorithm_options = Json{{"cache", options.cache},
                                 {"panels", options.gemm.panels},
                                 {"panel_width", options.gemm.panel_width},
                                 {"fp16_transfer", options.gemm.half_transfer}};
  entry.labels["local_gemm"] = local_gemm;
  return entry;
}

}  // namespace dsgd::app
