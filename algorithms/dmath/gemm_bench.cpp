#include "algorithms/dmath/gemm_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/collectives.hpp"
#include "core/memory.hpp"

namespace dsgd::algorithms::dmath {

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Operand `which`'s block rows x cols, generated (empty without payloads).
std::vector<float> generate(std::uint64_t seed, char which, Range rows, Range cols, bool payload) {
  std::vector<float> block;
  if (!payload) return block;
  block.resize(static_cast<std::size_t>(rows.count * cols.count));
  for (std::int64_t i = 0; i < rows.count; ++i) {
    for (std::int64_t j = 0; j < cols.count; ++j)
      block[static_cast<std::size_t>(i * cols.count + j)] = gemm_element(seed, which, rows.begin + i, cols.begin + j);
  }
  return block;
}

float max_abs(const std::vector<float>& data) {
  float most = 0;
  for (const float x : data) most = std::max(most, std::fabs(x));
  return most;
}

double max_abs_difference(const std::vector<float>& x, const std::vector<float>& y) {
  double most = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    most = std::max(most, std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i])));
  return most;
}

std::vector<double> flatten(const GemmRankResult& r) {
  std::vector<double> out = {static_cast<double>(r.product_s.size()),
                             static_cast<double>(r.transposed_s.size()),
                             r.bytes_sent,
                             r.transposed_bytes_sent,
                             r.max_abs_error,
                             r.error_scale,
                             r.transposed_max_abs_error,
                             r.transposed_error_scale};
  out.insert(out.end(), r.product_s.begin(), r.product_s.end());
  out.insert(out.end(), r.transposed_s.begin(), r.transposed_s.end());
  return out;
}

constexpr std::size_t kFixedFields = 8;

GemmRankResult unflatten(const std::vector<double>& in) {
  if (in.size() < kFixedFields) throw InternalError("gemm bench: a rank's result has too few numbers");
  const auto products = static_cast<std::size_t>(in[0]);
  const auto transposed = static_cast<std::size_t>(in[1]);
  if (in.size() != kFixedFields + products + transposed) {
    throw InternalError("gemm bench: a rank's result has " + std::to_string(in.size()) + " numbers, expected " +
                        std::to_string(kFixedFields + products + transposed));
  }
  GemmRankResult r;
  r.bytes_sent = in[2];
  r.transposed_bytes_sent = in[3];
  r.max_abs_error = in[4];
  r.error_scale = in[5];
  r.transposed_max_abs_error = in[6];
  r.transposed_error_scale = in[7];
  const auto times = in.begin() + kFixedFields;
  r.product_s.assign(times, times + static_cast<std::ptrdiff_t>(products));
  r.transposed_s.assign(times + static_cast<std::ptrdiff_t>(products), in.end());
  return r;
}

}  // namespace

float gemm_element(std::uint64_t seed, char which, std::int64_t i, std::int64_t j) {
  const std::uint64_t key = mix(seed ^ (static_cast<std::uint64_t>(static_cast<unsigned char>(which)) << 56)) ^
                            (static_cast<std::uint64_t>(i) << 28) ^ static_cast<std::uint64_t>(j);
  return static_cast<float>(static_cast<double>(mix(key) >> 40) * 0x1p-23 - 1.0);  // 24 bits: exact in a float
}

double gemm_error_bound(const GemmOptions& options) {
  return options.half_transfer ? kGemmHalfErrorBound : kGemmErrorBound;
}

void check_gemm_bench(const GemmBenchOptions& options, int ranks) {
  const std::string what = "gemm bench";
  if (ranks < 1) throw InputError(what + ": at least 1 rank, got " + std::to_string(ranks));
  if (options.size < 1) throw InputError(what + ": the size must be at least 1, got " + std::to_string(options.size));
  if (options.rounds < 1) throw InputError(what + ": at least 1 round, got " + std::to_string(options.rounds));
  if (options.threads_per_rank < 1) {
    throw InputError(what + ": at least 1 thread per rank, got " + std::to_string(options.threads_per_rank));
  }
  if (options.gemm.panels < 1)
    throw InputError(what + ": at least 1 panel, got " + std::to_string(options.gemm.panels));
  if (options.gemm.panel_width < 1) {
    throw InputError(what + ": the panel width must be at least 1, got " + std::to_string(options.gemm.panel_width));
  }
  if (options.gemm.half_transfer && options.algorithm != GemmAlgorithm::kCyclic) {
    throw InputError(what + ": --fp16 transfers are the cyclic algorithm's (SUMMA broadcasts fp32)");
  }
  if (options.transposed && options.algorithm != GemmAlgorithm::kCyclic) {
    throw InputError(what + ": --transposed needs the cyclic algorithm (SUMMA keeps no blocks for it)");
  }
  const Grid grid = options.algorithm == GemmAlgorithm::kCyclic ? Grid{ranks, 1} : square_grid(ranks);
  if (options.size < std::max(grid.rows, grid.cols)) {
    throw InputError(what + ": a " + std::to_string(options.size) + " x " + std::to_string(options.size) +
                     " product cannot be split over " + std::to_string(ranks) + " ranks (" +
                     std::string(to_string(options.algorithm)) + ")");
  }
}

GemmRankResult run_gemm_bench(Comm& comm, const GemmBenchOptions& options) {
  check_gemm_bench(options, comm.size());
  const GemmShape shape{options.size, options.size, options.size};
  const LocalBlocks mine = local_blocks(options.algorithm, shape, comm.size(), comm.rank());
  const bool payload = comm.has_payload();
  const bool cyclic = options.algorithm == GemmAlgorithm::kCyclic;
  const auto gemm = make_blas_gemm(options.threads_per_rank);
  const auto a = generate(options.seed, 'A', mine.a_rows, mine.a_cols, payload);
  const auto b = generate(options.seed, 'B', mine.b_rows, mine.b_cols, payload);
  std::vector<float> c(payload ? static_cast<std::size_t>(mine.c_rows.count * mine.c_cols.count) : 0);
  std::vector<float> d(payload && options.transposed ? static_cast<std::size_t>(mine.c_rows.count * shape.k) : 0);
  BlockCache cache;
  BlockCache* kept = options.cache && cyclic ? &cache : nullptr;

  float token = 0;
  const auto start_together = [&] {
    allreduce(comm, {payload ? &token : nullptr, 1}, AllreduceAlgorithm::kRecursiveDoubling,
              {Category::kWait, kFirstCollectiveTag + 1});
  };
  // Seconds and bytes of one call of `body`, started together with the other ranks.
  const auto timed = [&](const auto& body, std::vector<double>* seconds, double* bytes) {
    start_together();
    const std::uint64_t sent = comm.bytes_sent();
    const double start = comm.now_s();
    body();
    const double took = comm.now_s() - start;
    if (seconds != nullptr) seconds->push_back(took);
    if (bytes != nullptr) *bytes = static_cast<double>(comm.bytes_sent() - sent);
  };
  const auto product = [&] {
    if (!cyclic) return summa_multiply(comm, shape, a, b, c, *gemm, options.gemm);
    cache.forget();  // a new product: B may have changed
    cyclic_multiply(comm, shape, a, b, c, *gemm, options.gemm, kept);
  };
  const auto transposed = [&] { cyclic_multiply_transposed(comm, shape, c, b, d, *gemm, options.gemm, kept); };

  GemmRankResult result;
  for (int round = 0; round <= options.rounds; ++round) {  // round 0: the warm-up
    const bool counted = round > 0;
    timed(product, counted ? &result.product_s : nullptr, &result.bytes_sent);
    if (options.transposed) timed(transposed, counted ? &result.transposed_s : nullptr, &result.transposed_bytes_sent);
  }
  if (!options.verify || !payload) return result;

  // The reference: this rank's block of C as one sgemm of its rows of A and columns of B, whole.
  const auto a_rows = generate(options.seed, 'A', mine.c_rows, {0, shape.k}, true);
  const auto b_cols = generate(options.seed, 'B', {0, shape.k}, mine.c_cols, true);
  std::vector<float> reference(c.size());
  gemm->multiply_add(false, mine.c_rows.count, mine.c_cols.count, shape.k, a_rows.data(), shape.k, b_cols.data(),
                     mine.c_cols.count, reference.data(), mine.c_cols.count);
  result.max_abs_error = max_abs_difference(c, reference);
  result.error_scale = static_cast<double>(shape.k) * max_abs(a_rows) * max_abs(b_cols);
  if (options.transposed) {  // D = C Bᵀ, B whole (the cyclic layout's C columns are all of them)
    std::vector<float> reference_d(d.size());
    gemm->multiply_add(true, mine.c_rows.count, shape.k, shape.n, c.data(), shape.n, b_cols.data(), shape.n,
                       reference_d.data(), shape.k);
    result.transposed_max_abs_error = max_abs_difference(d, reference_d);
    result.transposed_error_scale = static_cast<double>(shape.n) * max_abs(c) * max_abs(b_cols);
  }
  return result;
}

std::vector<double> time_whole_sgemm(const GemmBenchOptions& options, int threads, int products, double min_total_s) {
  const std::int64_t n = options.size;
  const Range all{0, n};
  const auto a = generate(options.seed, 'A', all, all, true);
  const auto b = generate(options.seed, 'B', all, all, true);
  std::vector<float> c(a.size());
  const auto gemm = make_blas_gemm(threads);
  std::vector<double> seconds;
  double spent = 0;
  for (int product = 0; product <= products || spent < min_total_s; ++product) {  // product 0: the warm-up
    std::fill(c.begin(), c.end(), 0.0F);
    const auto start = std::chrono::steady_clock::now();
    gemm->multiply_add(false, n, n, n, a.data(), n, b.data(), n, c.data(), n);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (product == 0) continue;
    seconds.push_back(took.count());
    spent += took.count();
  }
  return seconds;
}

MemoryEstimate estimate_gemm_bench_memory(const GemmBenchOptions& options, int ranks) {
  const GemmShape shape{options.size, options.size, options.size};
  // Rank 0 holds a largest block of every operand: an upper bound for each rank.
  const LocalBlocks blocks = local_blocks(options.algorithm, shape, ranks, 0);
  const auto floats = [](Range rows, Range cols) { return static_cast<double>(rows.count * cols.count); };
  const double operands = floats(blocks.a_rows, blocks.a_cols) + floats(blocks.b_rows, blocks.b_cols) +
                          floats(blocks.c_rows, blocks.c_cols) +
                          (options.transposed ? floats(blocks.c_rows, {0, shape.k}) : 0);
  double buffers = 0;
  if (options.algorithm == GemmAlgorithm::kCyclic) {
    buffers = static_cast<double>(blocks.b_rows.count * shape.n) * (options.cache ? ranks : 2);
  } else {
    buffers =
        static_cast<double>(options.gemm.panel_width) * static_cast<double>(blocks.a_rows.count + blocks.b_cols.count);
  }
  const double check = options.verify ? floats(blocks.c_rows, {0, shape.k}) + floats({0, shape.k}, blocks.c_cols) +
                                            floats(blocks.c_rows, blocks.c_cols) * (options.transposed ? 2 : 1)
                                      : 0;
  MemoryEstimate estimate;
  estimate.per_worker_bytes = sizeof(float) * (operands + buffers + check) + kRankOverheadBytes;
  estimate.total_bytes = estimate.per_worker_bytes * ranks;
  estimate.formula =
      std::to_string(ranks) + " ranks x (" + bytes_text(sizeof(float) * operands) + " of blocks + " +
      bytes_text(sizeof(float) * buffers) + " of " +
      (options.algorithm == GemmAlgorithm::kCyclic ? (options.cache ? "kept blocks" : "two buffers") : "panels") +
      " + " + bytes_text(sizeof(float) * check) + " for the check + " + bytes_text(kRankOverheadBytes) + ")";
  return estimate;
}

std::string encode(const std::vector<GemmRankResult>& ranks) {
  std::string text;
  char number[32];
  for (const auto& rank : ranks) {
    for (const double x : flatten(rank)) {
      std::snprintf(number, sizeof number, "%.17g ", x);
      text += number;
    }
    text += '\n';
  }
  return text;
}

std::vector<GemmRankResult> decode_gemm_results(const std::string& text) {
  std::vector<GemmRankResult> ranks;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream numbers(line);
    std::vector<double> values;
    double x = 0;
    while (numbers >> x) values.push_back(x);
    ranks.push_back(unflatten(values));
  }
  return ranks;
}

std::vector<GemmRankResult> gather_gemm_results(Comm& comm, const GemmRankResult& mine) {
  constexpr Tag kCountTag = 90;
  constexpr Tag kValuesTag = 91;
  if (comm.rank() != 0) {
    const auto values = flatten(mine);
    const double count = static_cast<double>(values.size());
    comm.send(0, kCountTag, &count, sizeof count, Category::kWait);
    comm.send(0, kValuesTag, values.data(), values.size() * sizeof(double), Category::kWait);
    return {};
  }
  std::vector<GemmRankResult> all = {mine};
  for (int rank = 1; rank < comm.size(); ++rank) {
    double count = 0;
    comm.recv(rank, kCountTag, &count, sizeof count, Category::kWait);
    std::vector<double> values(static_cast<std::size_t>(count));
    comm.recv(rank, kValuesTag, values.data(), values.size() * sizeof(double), Category::kWait);
    all.push_back(unflatten(values));
  }
  return all;
}

}  // namespace dsgd::algorithms::dmath
