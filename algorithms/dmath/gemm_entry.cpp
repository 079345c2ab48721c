#include "algorithms/dmath/gemm_entry.hpp"

#include <algorithm>

#include "algorithms/dmath/distributed_gemm.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"

namespace dsgd::algorithms::dmath {

reports::Entry to_entry(const GemmBenchOptions& options, const std::vector<GemmRankResult>& ranks,
                        const std::string& executor, const std::string& fidelity, const std::string& local_gemm) {
  if (ranks.empty()) throw InternalError("dmath::to_entry: no rank results");
  // Per round the slowest rank's time: the product is done when its last block is.
  const auto slowest = [&](auto member) {
    std::vector<double> rounds((ranks.front().*member).size(), 0.0);
    for (const auto& rank : ranks) {
      for (std::size_t i = 0; i < rounds.size() && i < (rank.*member).size(); ++i)
        rounds[i] = std::max(rounds[i], (rank.*member)[i]);
    }
    return rounds;
  };
  const auto products = slowest(&GemmRankResult::product_s);
  const double seconds = median(products);
  const std::string algorithm(to_string(options.algorithm));
  reports::Entry entry = reports::timed_entry("gemm/" + algorithm + "/" + std::to_string(options.size), executor,
                                              fidelity, algorithm, static_cast<std::int64_t>(ranks.size()), seconds);
  entry.iterations = static_cast<std::int64_t>(products.size());
  entry.seed = options.seed;
  const double flops = GemmShape{options.size, options.size, options.size}.flops();
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
    entry.counters["error_bound"] = gemm_error_bound(options.gemm);
  }
  if (options.transposed) {
    const auto transposed = slowest(&GemmRankResult::transposed_s);
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

reports::Entry sgemm_baseline(const GemmBenchOptions& options, int threads) {
  const auto n = options.size;
  const double time = median(time_whole_sgemm(options, threads, options.rounds));
  const double flops = GemmShape{n, n, n}.flops();
  auto entry = reports::timed_entry("gemm/sgemm/" + std::to_string(n) + "/" + std::to_string(threads), "threads",
                                    "measured", "sgemm", 1, time);
  entry.iterations = options.rounds;
  entry.counters = {{"size", static_cast<double>(n)},
                    {"flops", flops},
                    {"seconds", time},
                    {"gflops", flops / time / 1e9},
                    {"threads_per_rank", static_cast<double>(threads)}};
  entry.labels["local_gemm"] = make_blas_gemm(threads)->description();
  return entry;
}

}  // namespace dsgd::algorithms::dmath
