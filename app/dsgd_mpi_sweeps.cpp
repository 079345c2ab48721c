#include "app/dsgd_mpi_sweeps.hpp"

#include <algorithm>
#include <cstdio>

#include "app/run_common.hpp"
#include "core/format.hpp"
#include "measure/mpi/sweep_entries.hpp"
#include "reports/allreduce_entry.hpp"

namespace dsgd::app {

namespace {

namespace mpi = measure::mpi;
using mpi::MpiComm;

void write(const std::string& path, const reports::Results& results, bool quiet = false) {
  if (path.empty()) return;
  reports::write_results(path, results);
  if (!quiet) std::printf("wrote %s\n", path.c_str());
}

}  // namespace

void pingpong_command(MpiComm& comm, const PingPongCli& cli, const std::string& command) {
  const auto sizes = mpi::pingpong(comm, cli.sweep);
  if (comm.rank() != 0) return;
  auto results = new_results(command);
  results.benchmarks = mpi::to_entries(sizes, cli.sweep, comm.size());
  if (!cli.quiet) {
    std::printf("%12s %14s %14s %12s\n", "bytes", "round trip us", "one way us", "algbw GB/s");
    std::vector<measure::PingPongPoint> points;
    for (const auto& entry : results.benchmarks) {
      const double bytes = entry.counters.at("bytes");
      const double round_trip = entry.counters.at("round_trip_s");
      points.push_back({bytes, round_trip});
      std::printf("%12.0f %14.3f %14.3f %12.3f\n", bytes, round_trip * 1e6, round_trip / 2 * 1e6,
                  bytes / (round_trip / 2) / 1e9);
    }
    std::printf("alpha-beta fit (round trip = 2 alpha + 2 n beta, relative least squares):\n");
    for (const auto& fit : measure::fit_alpha_beta(points, cli.boundaries)) {
      std::printf("  %s\n", measure::describe(fit).c_str());
    }
  }
  write(cli.results, results, cli.quiet);
  std::fflush(stdout);
}

// --- waiting --------------------------------------------------------------------------------------------------

void waiting_command(MpiComm& comm, const WaitingCli& cli, const std::string& command) {
  const auto measured = measure::measure_waiting_share(comm, cli.seconds, measure::process_cpu_seconds);
  if (comm.rank() != 0) return;
  std::printf("rank 0 waited %.3f s while %d ranks computed and took %.3f s of CPU: %.3f of a core\n", measured.wall_s,
              measured.computing, measured.cpu_s, measured.share());
  if (cli.results.empty()) return;
  auto results = new_results(command);
  results.benchmarks.push_back(mpi::to_entry(measured, comm.size()));
  reports::write_results(cli.results, results);
}

// --- allreduce ------------------------------------------------------------------------------------------------

void allreduce_command(MpiComm& comm, const AllreduceCli& cli, const std::string& command) {
  const auto sweep = mpi::allreduce_sweep(comm, cli.sweep);
  if (comm.rank() != 0) return;
  const auto& variants = sweep.variants;
  auto results = new_results(command);
  auto entries = mpi::allreduce_entries(sweep);
  const auto mpi_index =
      static_cast<std::size_t>(std::find(variants.begin(), variants.end(), mpi::kMpiVariant) - variants.begin());
  const bool has_mpi = mpi_index < variants.size();
  std::printf("allreduce on %d ranks, median of %d alternating rounds, busbw GB/s (algbw x %s)\n", comm.size(),
              cli.sweep.rounds, fixed(reports::allreduce_bus_factor(comm.size()), 3).c_str());
  std::printf("%12s", "bytes");
  for (const auto& variant : variants) std::printf(" %19s", variant.c_str());
  std::printf("%s\n", has_mpi ? "   best ours / MPI" : "");
  // allreduce_entries lists the variants of one size together, in sweep order.
  const auto busbw = [&](std::size_t s, std::size_t v) {
    return entries[s * variants.size() + v].counters.at("busbw_Bps");
  };
  for (std::size_t s = 0; s < sweep.sizes.size(); ++s) {
    double best_ours = 0;
    std::printf("%12.0f", entries[s * variants.size()].counters.at("bytes"));
    for (std::size_t v = 0; v < variants.size(); ++v) {
      if (v != mpi_index) best_ours = std::max(best_ours, busbw(s, v));
      std::printf(" %19s", fixed(busbw(s, v) / 1e9, 3).c_str());
    }
    if (has_mpi) std::printf(" %17s", fixed(best_ours / busbw(s, mpi_index), 3).c_str());
    std::printf("\n");
  }
  results.benchmarks = std::move(entries);
  write(cli.results, results);
  std::fflush(stdout);
}

}  // namespace dsgd::app
