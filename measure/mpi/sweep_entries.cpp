#include "measure/mpi/sweep_entries.hpp"

#include <algorithm>
#include <string>

#include "core/stats.hpp"
#include "measure/mpi/comm.hpp"
#include "measure/pingpong_buffers.hpp"

namespace dsgd::measure::mpi {

namespace {

// A measured entry of this executor: `seconds` of `iterations` on `ranks` ranks.
reports::Entry measured_entry(std::string name, std::string algorithm, int ranks, std::int64_t iterations,
                              double seconds) {
  reports::Entry entry = reports::timed_entry(std::move(name), "mpi", "measured", std::move(algorithm), ranks, seconds);
  entry.iterations = iterations;
  return entry;
}

}  // namespace

std::vector<reports::Entry> to_entries(const std::vector<PingPongSamples>& sizes, const PingPongOptions& options,
                                       int ranks) {
  std::vector<reports::Entry> entries;
  const std::string transport = mpi_library_version() + ", dsgd MpiComm send/recv";
  const std::string buffers = pingpong_buffers_text(static_cast<std::size_t>(options.pool_bytes));
  for (const auto& size : sizes) {
    const double round_trip = median(size.round_trip_s);
    const double bytes = static_cast<double>(size.bytes);
    const auto count = static_cast<std::int64_t>(size.round_trip_s.size());
    auto entry =
        measured_entry("pingpong/" + std::to_string(size.bytes), "pingpong", ranks, count * size.trips, round_trip);
    const auto [least, most] = std::minmax_element(size.round_trip_s.begin(), size.round_trip_s.end());
    entry.counters = {{"bytes", bytes},
                      {"round_trip_s", round_trip},
                      {"round_trip_min_s", *least},
                      {"round_trip_max_s", *most},
                      {"round_trip_mean_s", mean(size.round_trip_s)},
                      {"one_way_s", round_trip / 2},
                      {"algbw_Bps", bytes / (round_trip / 2)},
                      {"samples", static_cast<double>(count)},
                      {"computing_ranks", options.busy ? ranks - 2 : 0},
                      {"think_s", options.think_s},
                      {"pool_bytes", options.pool_bytes}};
    entry.labels = {{"transport", transport}, {"buffers", buffers}};
    entries.push_back(std::move(entry));
  }
  return entries;
}

reports::Entry to_entry(const WaitingShare& measured, int ranks) {
  auto entry = measured_entry("waiting_share", "waiting_share", ranks, 1, measured.wall_s);
  entry.cpu_time = measured.cpu_s;
  entry.counters = {{"waiting_share", measured.share()}, {"computing_ranks", measured.computing}};
  return entry;
}

std::vector<reports::Entry> allreduce_entries(const AllreduceSweep& sweep) {
  const auto& variants = sweep.variants;
  const std::string version = mpi_library_version();
  const auto mpi_index =
      static_cast<std::size_t>(std::find(variants.begin(), variants.end(), kMpiVariant) - variants.begin());
  const bool has_mpi = mpi_index < variants.size();
  auto entries = to_entries(sweep, "mpi");
  // to_entries lists the variants of one size together, in sweep order.
  for (std::size_t s = 0; s < sweep.sizes.size(); ++s) {
    const auto at = [&](std::size_t v) -> reports::Entry& { return entries[s * variants.size() + v]; };
    const double mpi_busbw = has_mpi ? at(mpi_index).counters.at("busbw_Bps") : 0;
    for (std::size_t v = 0; v < variants.size(); ++v) {
      auto& entry = at(v);
      const bool is_mpi = v == mpi_index;
      if (is_mpi) entry.algorithm = "MPI_Allreduce";
      if (has_mpi && !is_mpi) entry.counters["vs_mpi"] = entry.counters.at("busbw_Bps") / mpi_busbw;
      entry.labels["implementation"] =
          is_mpi ? "MPI_Allreduce, " + version : "dsgd core/collectives.hpp over MpiComm (" + version + ")";
    }
  }
  return entries;
}

}  // namespace dsgd::measure::mpi
