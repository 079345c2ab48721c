// Google Benchmark of the MPI executor: ping-pong between ranks 0 and 1, and allreduce -- core/collectives.hpp's
// four algorithms over MpiComm and MPI_Allreduce -- at DeepBench's sizes. Run it under mpirun, for example
//   mpirun --oversubscribe --bind-to none -np 2 build/measure/bench/dsgd_bench_mpi
//       --benchmark_filter=allreduce --benchmark_repetitions=5 --max_floats=6553600
//       --benchmark_out=mpi.json --benchmark_out_format=json
//
// Every rank must run the same benchmarks for the same number of iterations, or they would wait for each other
// forever: so each benchmark has a fixed iteration count (a function of its size) and manual time, and every
// iteration's time is the slowest rank's. Rank 0 reports and writes --benchmark_out; the others report nothing.
// Google Benchmark runs one benchmark's repetitions back to back, and its --benchmark_enable_random_interleaving
// seeds its shuffle from std::random_device, so ranks would shuffle differently and deadlock: do not use it here.
// For A/B comparisons on a machine whose speed drifts, `dsgd-mpi allreduce` alternates the variants within each
// round; this executable is for Google Benchmark's tooling (compare.py, JSON).
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/collectives.hpp"
#include "measure/allreduce_sweep.hpp"
#include "measure/mpi/comm.hpp"
#include "measure/mpi/executor.hpp"
#include "measure/mpi/leak_check.hpp"

namespace {

using dsgd::Category;
using dsgd::measure::mpi::MpiComm;

const std::vector<std::size_t> kDeepBenchFloats = {100000, 3097600, 4194304, 6553600, 16777217, 38360000, 64500000};

class SilentReporter final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

double max_over_ranks(MpiComm& comm, double value) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, comm.handle());
  return value;
}

// About a second of work per benchmark at the bandwidths seen here, at least 3 iterations and at most 1000.
benchmark::IterationCount iterations_for(double bytes_per_iteration) {
  return static_cast<benchmark::IterationCount>(std::clamp(1e9 / std::max(bytes_per_iteration, 1.0), 3.0, 1000.0));
}

void register_pingpong(MpiComm& comm) {
  for (std::size_t bytes = 8; bytes <= (std::size_t{64} << 20); bytes *= 4) {
    const std::string name = "pingpong/" + std::to_string(bytes);
    benchmark::RegisterBenchmark(
        name.c_str(),
        [&comm, bytes](benchmark::State& state) {
          std::vector<std::byte> buffer(bytes, std::byte{1});
          for (auto _ : state) {
            const double start = comm.now_s();
            if (comm.rank() == 0) {
              comm.send(1, 1, buffer.data(), bytes, Category::kNetwork);
              comm.recv(1, 1, buffer.data(), bytes, Category::kNetwork);
            } else if (comm.rank() == 1) {
              comm.recv(0, 1, buffer.data(), bytes, Category::kNetwork);
              comm.send(0, 1, buffer.data(), bytes, Category::kNetwork);
            }
            state.SetIterationTime(comm.now_s() - start);  // rank 0's round trip is what it reports
          }
          state.counters["bytes"] = static_cast<double>(bytes);
          // One-way bandwidth: each round trip carries the message both ways.
          state.counters["one_way_Bps"] =
              benchmark::Counter(2.0 * static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
          state.SetLabel("mpi: dsgd MpiComm send/recv");
        })
        ->UseManualTime()
        ->Iterations(std::clamp<benchmark::IterationCount>(
            static_cast<benchmark::IterationCount>((std::size_t{1} << 26) / bytes), 3, 10000));
  }
}

void register_allreduce(MpiComm& comm, std::size_t max_floats) {
  const int n = comm.size();
  const std::string mpi_version = dsgd::measure::mpi::mpi_library_version();
  for (const std::size_t floats : kDeepBenchFloats) {
    if (max_floats > 0 && floats > max_floats) continue;
    const double bytes = static_cast<double>(floats * sizeof(float));
    std::vector<std::string> variants;
    for (const auto algorithm : dsgd::kAllreduceAlgorithms) variants.emplace_back(dsgd::to_string(algorithm));
    variants.emplace_back("mpi");
    for (const auto& variant : variants) {
      const std::string name = "allreduce/" + variant + "/" + std::to_string(floats);
      const std::string label = variant == "mpi" ? "mpi: MPI_Allreduce, " + mpi_version
                                                 : "mpi: dsgd " + variant + " over MpiComm, " + mpi_version;
      benchmark::RegisterBenchmark(
          name.c_str(),
          [&comm, floats, bytes, n, variant, label](benchmark::State& state) {
            std::vector<float> values(floats);
            for (auto _ : state) {
              // Fresh small-integer inputs each time, so repeated sums neither overflow nor change the work.
              for (std::size_t i = 0; i < floats; ++i)
                values[i] = static_cast<float>(comm.rank() + 1 + static_cast<int>(i % 13));
              comm.barrier();
              const double start = comm.now_s();
              if (variant == "mpi") {
                dsgd::measure::mpi::mpi_allreduce(comm, {values.data(), floats});
              } else {
                dsgd::allreduce(comm, {values.data(), floats}, dsgd::allreduce_algorithm_from_string(variant));
              }
              state.SetIterationTime(max_over_ranks(comm, comm.now_s() - start));
            }
            state.counters["bytes"] = bytes;
            state.counters["algbw_Bps"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
            state.counters["busbw_Bps"] = benchmark::Counter(bytes * dsgd::reports::allreduce_bus_factor(n),
                                                             benchmark::Counter::kIsIterationInvariantRate);
            state.SetLabel(label);
          })
          ->UseManualTime()
          ->Iterations(iterations_for(bytes))
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  dsgd::measure::mpi::MpiSession session(&argc, &argv);
  // Our own flag, and on ranks other than 0 no --benchmark_out (Google Benchmark would truncate rank 0's file).
  std::size_t max_floats = 0;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--max_floats=", 13) == 0) {
      max_floats = std::stoul(argv[i] + 13);
    } else if (session.world_rank() != 0 && std::strncmp(argv[i], "--benchmark_out", 15) == 0) {
      continue;
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  try {
    dsgd::WorldOptions options;
    options.timeout_s = 120;
    MpiComm comm(MPI_COMM_WORLD, options);
    if (comm.size() < 2) {
      std::fprintf(stderr, "dsgd_bench_mpi: run under mpirun with at least 2 ranks\n");
      return 2;
    }
    register_pingpong(comm);
    register_allreduce(comm, max_floats);
    if (comm.rank() == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      SilentReporter silent;
      benchmark::RunSpecifiedBenchmarks(&silent);
    }
    benchmark::Shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dsgd_bench_mpi: rank %d: %s\n", session.world_rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return 0;
}
