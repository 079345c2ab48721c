#pragma once
// The results entry of one point of seed 001's distributed GEMM benchmark (gemm_bench.hpp), measured or simulated,
// built beside the benchmark that produced its numbers.

#include <string>
#include <vector>

#include "algorithms/dmath/gemm_bench.hpp"
#include "reports/results.hpp"

namespace dsgd::algorithms::dmath {

// The entry of one point: `ranks` results of `options` (slowest rank per round, median over rounds; seconds_min the
// fastest round), with the error against the reference where measured. `local_gemm` describes the local products.
reports::Entry to_entry(const GemmBenchOptions& options, const std::vector<GemmRankResult>& ranks,
                        const std::string& executor, const std::string& fidelity, const std::string& local_gemm);

// OpenBLAS sgemm of the whole product of `options.size` on `threads` threads of this process, the one-node
// reference: timed options.rounds times, the median as its time, GFLOP/s and the library that ran.
reports::Entry sgemm_baseline(const GemmBenchOptions& options, int threads);

}  // namespace dsgd::algorithms::dmath
