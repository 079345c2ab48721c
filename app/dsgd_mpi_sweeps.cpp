#include "app/dsgd_mpi_sweeps.hpp"

#include <algorithm>
#include <cstdio>

#include "app/run_common.hpp"
#include "core/format.hpp"
#include "core/stats.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/waiting_share.hpp"

namespace dsgd::app {

namespace {

namespace mpi = measure::mpi;
using mpi::MpiComm;

// A measured entry of this executor: `seconds` of `iterations`, on every rank of `comm`.
reports::Entry measured_entry(const MpiComm& comm, std::string name, std::string algorithm, std::int64_t iterations,
                              double seconds) {
  reports::Entry entry =
      reports::timed_entry(std::move(name), "mpi", "measured", std::move(algorithm), comm.size(), seconds);
  entry.iterations = iterations;
  return entry;
}

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
  std::vector<measure::PingPongPoint> points;
  if (!cli.quiet) std::printf("%12s %14s %14s %12s\n", "bytes", "round trip us", "one way us", "algbw GB/s");
  for (const auto& size : sizes) {
    const double round_trip = median(size.round_trip_s);
    const double bytes = static_cast<double>(size.bytes);
    const auto count = static_cast<std::int64_t>(size.round_trip_s.size());
    auto entry =
        measured_entry(comm, "pingpong/" + std::to_string(size.bytes), "pingpong", count * size.trips, round_trip);
    const auto [least, most] = std::minmax_element(size.round_trip_s.begin(), size.round_trip_s.end());
    // The mean counts the samples a preempted rank stretched, which the median leaves out: what a message costs on
    // average beside computing ranks (the loaded link is fitted to it).
    entry.counters = {{"bytes", bytes},
                      {"round_trip_s", round_trip},
                      {"round_trip_min_s", *least},
                      {"round_trip_max_s", *most},
                      {"round_trip_mean_s", mean(size.round_trip_s)},
                      {"one_way_s", round_trip / 2},
                      {"algbw_Bps", bytes / (round_trip / 2)},
                      {"samples", static_cast<double>(count)},
                      {"computing_ranks", cli.sweep.busy ? comm.size() - 2 : 0},
                      {"think_s", cli.sweep.think_s},
                      {"pool_bytes", cli.sweep.pool_bytes}};
    entry.labels["transport"] = mpi::mpi_library_version() + ", dsgd MpiComm send/recv";
    entry.labels["buffers"] = measure::pingpong_buffers_text(static_cast<std::size_t>(cli.sweep.pool_bytes));
    results.benchmarks.push_back(entry);
    points.push_back({bytes, round_trip});
    if (!cli.quiet) {
      std::printf("%12zu %14.3f %14.3f %12.3f\n", size.bytes, round_trip * 1e6, round_trip / 2 * 1e6,
                  bytes / (round_trip / 2) / 1e9);
    }
  }
  if (!cli.quiet) {
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
  auto entry = measured_entry(comm, "waiting_share", "waiting_share", 1, measured.wall_s);
  entry.cpu_time = measured.cpu_s;
  entry.counters["waiting_share"] = measured.share();
  entry.counters["computing_ranks"] = measured.computing;
  results.benchmarks.push_back(std::move(entry));
  reports::write_results(cli.results, results);
}

// --- allreduce ------------------------------------------------------------------------------------------------

void allreduce_command(MpiComm& comm, const AllreduceCli& cli, const std::string& command) {
  const auto sweep = mpi::allreduce_sweep(comm, cli.sweep);
  if (comm.rank() != 0) return;
  const auto& variants = sweep.variants;
  auto results = new_results(command);
  const std::string mpi_version = mpi::mpi_library_version();
  const auto mpi_index =
      static_cast<std::size_t>(std::find(variants.begin(), variants.end(), mpi::kMpiVariant) - variants.begin());
  const bool has_mpi = mpi_index < variants.size();
  auto entries = measure::to_entries(sweep, "mpi");
  std::printf("allreduce on %d ranks, median of %d alternating rounds, busbw GB/s (algbw x %s)\n", comm.size(),
              cli.sweep.rounds, fixed(measure::allreduce_bus_factor(comm.size()), 3).c_str());
  std::printf("%12s", "bytes");
  for (const auto& variant : variants) std::printf(" %19s", variant.c_str());
  std::printf("%s\n", has_mpi ? "   best ours / MPI" : "");
  // to_entries lists the variants of one size together, in sweep order.
  const auto at = [&](std::size_t s, std::size_t v) -> reports::Entry& { return entries[s * variants.size() + v]; };
  for (std::size_t s = 0; s < sweep.sizes.size(); ++s) {
    const double mpi_busbw = has_mpi ? at(s, mpi_index).counters.at("busbw_Bps") : 0;
    double best_ours = 0;
    std::printf("%12.0f", at(s, 0).counters.at("bytes"));
    for (std::size_t v = 0; v < variants.size(); ++v) {
      auto& entry = at(s, v);
      const bool is_mpi = v == mpi_index;
      if (is_mpi) entry.algorithm = "MPI_Allreduce";
      const double busbw = entry.counters.at("busbw_Bps");
      if (!is_mpi) best_ours = std::max(best_ours, busbw);
      if (has_mpi && !is_mpi) entry.counters["vs_mpi"] = busbw / mpi_busbw;
      entry.labels["implementation"] =
          is_mpi ? "MPI_Allreduce, " + mpi_version : "dsgd core/collectives.hpp over MpiComm (" + mpi_version + ")";
      std::printf(" %19s", fixed(busbw / 1e9, 3).c_str());
    }
    if (has_mpi) std::printf(" %17s", fixed(best_ours / mpi_busbw, 3).c_str());
    std::printf("\n");
  }
  results.benchmarks = std::move(entries);
  write(cli.results, results);
  std::fflush(stdout);
}

}  // namespace dsgd::app
