// `dsgd-mpi`: the MPI worker executable. `dsgd` links SimGrid, whose library defines MPI_* too, so the MPI side is
// this separate program that dsgd (or a user) starts under mpirun (measure/mpi/launch.hpp). Subcommands:
//   pingpong   latency and bandwidth between ranks 0 and 1, 8 B .. 64 MiB (what `dsgd calibrate` fits), the
//              other ranks idle or (--busy) computing
//   allreduce  core/collectives.hpp's four allreduce algorithms against MPI_Allreduce at DeepBench's sizes
//   waiting    the share of a core rank 0 takes while it waits and the other ranks compute (dsgd calibrate)
//   selftest   a quick end-to-end check of the MPI executor (used by the tests), optionally with a failing rank
//   run        training with an algorithm of the catalog (what `dsgd run --executor mpi` starts)
// Rank 0 prints and writes the results file (reports/results.hpp schema). A rank that fails prints one line
// "dsgd-mpi: rank R: <what>" and ends the whole world with MPI_Abort, so no other rank waits for it.
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "algorithms/runner.hpp"
#include "app/run_common.hpp"
#include "core/collectives.hpp"
#include "core/stats.hpp"
#include "measure/calibration.hpp"
#include "measure/host_info.hpp"
#include "measure/mpi/comm.hpp"
#include "measure/mpi/executor.hpp"
#include "measure/pingpong_buffers.hpp"
#include "measure/waiting_share.hpp"
#include "reports/results.hpp"

namespace {

using dsgd::Category;
using dsgd::Floats;
using dsgd::measure::mpi::MpiComm;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;

// DeepBench's allreduce sizes, in floats (baidu-research/DeepBench, all-reduce kernels).
const std::vector<std::size_t> kDeepBenchFloats = {100000, 3097600, 4194304, 6553600, 16777217, 38360000, 64500000};

// Open MPI's shared-memory transport switches from eager to rendezvous at btl_vader_eager_limit (4096 B, headers
// included; measured here: payloads up to 4040 B go eager, from 4048 B rendezvous): extra sizes around it show
// where the step is.
const std::vector<double> kNearEagerLimit = {3072, 3584, 4000, 4032, 4040, 4048, 4064, 4160, 4608, 6144};

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string command_line(int argc, char** argv) {
  std::string text = "dsgd-mpi";
  for (int i = 1; i < argc; ++i) text += std::string(" ") + argv[i];
  return text;
}

dsgd::reports::Results new_results(const std::string& command) {
  dsgd::reports::Results results;
  results.provenance = dsgd::reports::current_provenance(command);
  std::error_code ec;
  results.executable = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  results.num_cpus = dsgd::measure::cpu_info().logical_cores;
  return results;
}

// The slowest rank's value: a collective is done when the last rank is done.
double max_over_ranks(MpiComm& comm, double value) {
  dsgd::measure::mpi::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, comm.handle()),
                                comm.rank(), "MPI_Allreduce of timings");
  return value;
}

// --- pingpong -------------------------------------------------------------------------------------------------

struct PingPongOptions {
  double min_bytes = 8;
  double max_bytes = 64.0 * 1024 * 1024;
  int rounds = 15;
  std::string results;
  bool quiet = false;  // no table and fit on standard output (dsgd calibrate prints its own)
  // Ranks 2 and up compute while 0 and 1 ping-pong (instead of idling): the link as a transfer beside computing
  // ranks sees it, on a machine with more ranks than cores (platforms::SharedChip::loaded_link).
  bool busy = false;
  // > 0: rank 0 computes this long before each round trip, one trip a sample, and times the round trip alone: a
  // worker's exchange with a master that waited through the worker's forward/backward (with --busy, beside the
  // other computing workers). Back-to-back round trips keep both ranks of the pair awake, which such a master may not
  // be (docs/validation.md "Known limits"; what it measured: docs/validation-log.md "Several runs a row, and the rate
  // alone in turns").
  double think_s = 0;
  // 0: one buffer, warm in cache (the classic ping-pong); else buffers cycled through this many bytes, each message
  // starting from memory as training's exchanges do (measure/pingpong_buffers.hpp).
  double pool_bytes = 0;
  // Where the time per byte changes here: Open MPI's eager protocol up to 4040 B, rendezvous from 4048 B; above
  // 64 KiB the copy costs dominate; from 4 MiB messages no longer fit in the caches (2 MiB L2 per core, 32 MiB L3
  // shared by sender and receiver) and run at memory speed, the regime of large gradients.
  std::vector<double> boundaries{dsgd::measure::kDefaultSegmentBoundaries.begin(),
                                 dsgd::measure::kDefaultSegmentBoundaries.end()};
};

std::vector<std::size_t> pingpong_sizes(const PingPongOptions& options) {
  std::vector<std::size_t> sizes;
  for (double bytes = 1; bytes <= options.max_bytes; bytes *= 2) {
    if (bytes >= options.min_bytes) sizes.push_back(static_cast<std::size_t>(bytes));
  }
  for (const double bytes : kNearEagerLimit) {
    if (bytes >= options.min_bytes && bytes <= options.max_bytes) sizes.push_back(static_cast<std::size_t>(bytes));
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

void pingpong(MpiComm& comm, const PingPongOptions& options, const std::string& command) {
  if (comm.size() < 2) throw dsgd::InputError("pingpong needs at least 2 ranks (mpirun -np 2), got " +
                                              std::to_string(comm.size()));
  if (options.rounds < 1) throw dsgd::InputError("pingpong: --rounds must be at least 1");
  if (!(options.min_bytes >= 1) || options.max_bytes < options.min_bytes) {
    throw dsgd::InputError("pingpong: need 1 <= --min-bytes <= --max-bytes");
  }
  const auto sizes = pingpong_sizes(options);
  const int rank = comm.rank();
  constexpr dsgd::Tag kStopTag = 2;
  if (options.busy && rank >= 2) {
    // Compute in millisecond slices until rank 0 says the ping-pong is over (a probe between slices).
    for (int arrived = 0; arrived == 0;) {
      dsgd::measure::compute_for(1e-3);
      dsgd::measure::mpi::check_mpi(MPI_Iprobe(0, kStopTag, comm.handle(), &arrived, MPI_STATUS_IGNORE), rank,
                                    "MPI_Iprobe for the end of the ping-pong");
    }
    char stop = 0;
    comm.recv(0, kStopTag, &stop, 1, Category::kWait);
    return;
  }
  if (!(options.pool_bytes >= 0)) throw dsgd::InputError("pingpong: --pool-bytes must be >= 0");
  if (!(options.think_s >= 0)) throw dsgd::InputError("pingpong: --think must be >= 0 seconds");
  dsgd::measure::PingPongBuffers buffers(sizes.back(), static_cast<std::size_t>(options.pool_bytes));
  std::vector<std::vector<double>> samples(sizes.size());
  const auto trips_of = [&](std::size_t bytes) {
    return options.think_s > 0 ? 1 : dsgd::measure::trips_per_sample(bytes);
  };
  // Round 0 warms up (page faults, transport set-up) and is not kept. Rounds sweep all sizes, so drift over the
  // run affects every size alike instead of biasing the large ones.
  for (int round = 0; round <= options.rounds; ++round) {
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      const std::size_t bytes = sizes[s];
      const int trips = trips_of(bytes);
      if (rank > 1) continue;
      if (rank == 0 && options.think_s > 0) dsgd::measure::compute_for(options.think_s);
      const double start = comm.now_s();
      dsgd::measure::pingpong_trips(comm, buffers, bytes, trips);
      if (rank == 0 && round > 0) samples[s].push_back((comm.now_s() - start) / trips);
    }
    if (!options.busy) comm.barrier();  // idle ranks wait one round at a time, well inside the timeout
  }
  if (options.busy && rank == 0) {
    char stop = 1;
    for (int other = 2; other < comm.size(); ++other) comm.send(other, kStopTag, &stop, 1, Category::kWait);
  }
  if (rank != 0) return;

  auto results = new_results(command);
  std::vector<dsgd::measure::PingPongPoint> points;
  if (!options.quiet) std::printf("%12s %14s %14s %12s\n", "bytes", "round trip us", "one way us", "algbw GB/s");
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const double round_trip = median(samples[s]);
    const double bytes = static_cast<double>(sizes[s]);
    dsgd::reports::Entry entry;
    entry.name = "pingpong/" + std::to_string(sizes[s]);
    entry.iterations = static_cast<std::int64_t>(samples[s].size()) * trips_of(sizes[s]);
    entry.real_time = round_trip;
    entry.cpu_time = round_trip;
    entry.executor = "mpi";
    entry.fidelity = "measured";
    entry.algorithm = "pingpong";
    entry.ranks = comm.size();
    entry.counters["bytes"] = bytes;
    entry.counters["round_trip_s"] = round_trip;
    entry.counters["round_trip_min_s"] = *std::min_element(samples[s].begin(), samples[s].end());
    entry.counters["round_trip_max_s"] = *std::max_element(samples[s].begin(), samples[s].end());
    // The mean counts the samples a preempted rank stretched, which the median leaves out: what a message costs on
    // average beside computing ranks (the loaded link is fitted to it).
    entry.counters["round_trip_mean_s"] = dsgd::mean(samples[s]);
    entry.counters["one_way_s"] = round_trip / 2;
    entry.counters["algbw_Bps"] = bytes / (round_trip / 2);
    entry.counters["samples"] = static_cast<double>(samples[s].size());
    entry.labels["transport"] = dsgd::measure::mpi::mpi_library_version() + ", dsgd MpiComm send/recv";
    entry.counters["computing_ranks"] = options.busy ? comm.size() - 2 : 0;
    entry.counters["think_s"] = options.think_s;
    entry.counters["pool_bytes"] = options.pool_bytes;
    entry.labels["buffers"] = dsgd::measure::pingpong_buffers_text(static_cast<std::size_t>(options.pool_bytes));
    results.benchmarks.push_back(entry);
    points.push_back({bytes, round_trip});
    if (!options.quiet) {
      std::printf("%12zu %14.3f %14.3f %12.3f\n", sizes[s], round_trip * 1e6, round_trip / 2 * 1e6,
                  bytes / (round_trip / 2) / 1e9);
    }
  }
  if (!options.quiet) {
    std::printf("alpha-beta fit (round trip = 2 alpha + 2 n beta, relative least squares):\n");
    for (const auto& fit : dsgd::measure::fit_alpha_beta(points, options.boundaries)) {
      std::printf("  %s\n", dsgd::measure::describe(fit).c_str());
    }
  }
  if (!options.results.empty()) {
    dsgd::reports::write_results(options.results, results);
    if (!options.quiet) std::printf("wrote %s\n", options.results.c_str());
  }
  std::fflush(stdout);
}

// --- waiting --------------------------------------------------------------------------------------------------

struct WaitingOptions {
  double seconds = 2;
  std::string results;
};

void waiting(MpiComm& comm, const WaitingOptions& options, const std::string& command) {
  const auto measured = dsgd::measure::measure_waiting_share(comm, options.seconds, dsgd::measure::process_cpu_seconds);
  if (comm.rank() != 0) return;
  std::printf("rank 0 waited %.3f s while %d ranks computed and took %.3f s of CPU: %.3f of a core\n", measured.wall_s,
              measured.computing, measured.cpu_s, measured.share());
  if (options.results.empty()) return;
  auto results = new_results(command);
  dsgd::reports::Entry entry;
  entry.name = "waiting_share";
  entry.iterations = 1;
  entry.real_time = measured.wall_s;
  entry.cpu_time = measured.cpu_s;
  entry.executor = "mpi";
  entry.fidelity = "measured";
  entry.algorithm = "waiting_share";
  entry.ranks = comm.size();
  entry.counters["waiting_share"] = measured.share();
  entry.counters["computing_ranks"] = measured.computing;
  results.benchmarks.push_back(std::move(entry));
  dsgd::reports::write_results(options.results, results);
}

// --- allreduce ------------------------------------------------------------------------------------------------

struct AllreduceOptions {
  std::vector<std::size_t> sizes = kDeepBenchFloats;
  std::size_t max_floats = 0;  // 0: no limit
  int rounds = 7;
  std::vector<std::string> variants = {"ring", "recursive_doubling", "rabenseifner", "reduce_broadcast", "mpi"};
  std::string results;
};

constexpr std::string_view kMpiVariant = "mpi";

void fill_inputs(std::vector<float>& values, int rank) {
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1));
}

void run_variant(MpiComm& comm, const std::string& variant, std::vector<float>& values) {
  const Floats buffer{values.data(), values.size()};
  if (variant == kMpiVariant) {
    dsgd::measure::mpi::mpi_allreduce(comm, buffer);
  } else {
    dsgd::allreduce(comm, buffer, dsgd::allreduce_algorithm_from_string(variant));
  }
}

// Inputs are small integers, so every algorithm's sum is exact: a wrong result is a bug, not rounding.
void check_sums(const MpiComm& comm, const std::string& variant, const std::vector<float>& values) {
  const int n = comm.size();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto expected = static_cast<float>(static_cast<int>(i % 13 + 1) * n * (n + 1) / 2);
    if (values[i] != expected) {
      throw dsgd::InternalError("allreduce " + variant + " on " + std::to_string(values.size()) + " floats: element " +
                                std::to_string(i) + " is " + std::to_string(values[i]) + ", expected " +
                                std::to_string(expected));
    }
  }
}

void allreduce_sweep(MpiComm& comm, AllreduceOptions options, const std::string& command) {
  if (options.rounds < 1) throw dsgd::InputError("allreduce: --rounds must be at least 1");
  for (const auto& variant : options.variants) {
    if (variant != kMpiVariant) (void)dsgd::allreduce_algorithm_from_string(variant);  // lists the valid names
  }
  if (options.max_floats > 0) {
    std::erase_if(options.sizes, [&](std::size_t count) { return count > options.max_floats; });
  }
  if (options.sizes.empty()) throw dsgd::InputError("allreduce: no size left (check --sizes and --max-floats)");
  const int n = comm.size();
  const std::size_t largest = *std::max_element(options.sizes.begin(), options.sizes.end());
  std::vector<float> values(largest);
  // samples[size][variant]
  std::vector<std::vector<std::vector<double>>> samples(
      options.sizes.size(), std::vector<std::vector<double>>(options.variants.size()));

  // Round 0 checks every result and warms up; rounds 1.. are timed. Variants alternate within a round, starting
  // at a different one each round, because this machine's speed drifts by up to 2x between runs.
  for (int round = 0; round <= options.rounds; ++round) {
    for (std::size_t s = 0; s < options.sizes.size(); ++s) {
      values.resize(options.sizes[s]);
      for (std::size_t k = 0; k < options.variants.size(); ++k) {
        const std::size_t v = (k + static_cast<std::size_t>(round)) % options.variants.size();
        fill_inputs(values, comm.rank());
        comm.barrier();
        const double start = comm.now_s();
        run_variant(comm, options.variants[v], values);
        const double elapsed = max_over_ranks(comm, comm.now_s() - start);
        if (round == 0) {
          check_sums(comm, options.variants[v], values);
        } else {
          samples[s][v].push_back(elapsed);
        }
      }
    }
  }
  if (comm.rank() != 0) return;

  auto results = new_results(command);
  const std::string mpi_version = dsgd::measure::mpi::mpi_library_version();
  const auto mpi_index = static_cast<std::size_t>(
      std::find(options.variants.begin(), options.variants.end(), kMpiVariant) - options.variants.begin());
  std::printf("allreduce on %d ranks, median of %d alternating rounds, algbw GB/s (busbw = algbw x %s)\n", n,
              options.rounds, fixed(2.0 * (n - 1) / n, 3).c_str());
  std::printf("%10s %12s", "floats", "bytes");
  for (const auto& variant : options.variants) std::printf(" %19s", variant.c_str());
  std::printf("%s\n", mpi_index < options.variants.size() ? "   best ours / MPI" : "");
  for (std::size_t s = 0; s < options.sizes.size(); ++s) {
    const auto bytes = static_cast<double>(options.sizes[s] * sizeof(float));
    std::vector<double> algbw(options.variants.size());
    for (std::size_t v = 0; v < options.variants.size(); ++v) algbw[v] = bytes / median(samples[s][v]);
    double best_ours = 0;
    for (std::size_t v = 0; v < options.variants.size(); ++v) {
      if (v != mpi_index) best_ours = std::max(best_ours, algbw[v]);
    }
    std::printf("%10zu %12.0f", options.sizes[s], bytes);
    for (std::size_t v = 0; v < options.variants.size(); ++v) {
      const double seconds = median(samples[s][v]);
      dsgd::reports::Entry entry;
      const bool is_mpi = options.variants[v] == kMpiVariant;
      entry.name = "allreduce/" + options.variants[v] + "/" + std::to_string(options.sizes[s]);
      entry.iterations = static_cast<std::int64_t>(samples[s][v].size());
      entry.real_time = seconds;
      entry.cpu_time = seconds;
      entry.executor = "mpi";
      entry.fidelity = "measured";
      entry.algorithm = is_mpi ? "MPI_Allreduce" : options.variants[v];
      entry.ranks = n;
      entry.counters["floats"] = static_cast<double>(options.sizes[s]);
      entry.counters["bytes"] = bytes;
      entry.counters["seconds_min"] = *std::min_element(samples[s][v].begin(), samples[s][v].end());
      entry.counters["algbw_Bps"] = algbw[v];
      entry.counters["busbw_Bps"] = algbw[v] * 2.0 * (n - 1) / n;
      if (mpi_index < options.variants.size() && !is_mpi) entry.counters["vs_mpi"] = algbw[v] / algbw[mpi_index];
      entry.labels["implementation"] = is_mpi ? "MPI_Allreduce, " + mpi_version
                                              : "dsgd core/collectives.hpp over MpiComm (" + mpi_version + ")";
      results.benchmarks.push_back(entry);
      std::printf(" %19s", fixed(algbw[v] / 1e9, 3).c_str());
    }
    if (mpi_index < options.variants.size()) std::printf(" %17s", fixed(best_ours / algbw[mpi_index], 3).c_str());
    std::printf("\n");
  }
  if (!options.results.empty()) {
    dsgd::reports::write_results(options.results, results);
    std::printf("wrote %s\n", options.results.c_str());
  }
  std::fflush(stdout);
}

// --- selftest -------------------------------------------------------------------------------------------------

struct SelftestOptions {
  int fail_rank = -1;  // this rank throws on purpose, to test that the world ends instead of hanging
};

void selftest(MpiComm& comm, const SelftestOptions& options) {
  const int rank = comm.rank();
  const int n = comm.size();
  if (rank == options.fail_rank) {
    throw dsgd::Error("selftest: rank " + std::to_string(rank) + " fails on purpose (--fail-rank)");
  }
  if (options.fail_rank >= 0 && rank != options.fail_rank) {
    // Wait for a message the failing rank never sends: MPI_Abort from that rank must end this wait.
    float never = 0;
    comm.recv(options.fail_rank, 99, &never, sizeof never, Category::kWait);
  }
  // Every allreduce algorithm and MPI's, exact on integer inputs; then a ring of point-to-point messages.
  std::vector<float> values(1001);
  for (const auto algorithm : dsgd::kAllreduceAlgorithms) {
    fill_inputs(values, rank);
    dsgd::allreduce(comm, {values.data(), values.size()}, algorithm);
    check_sums(comm, std::string(dsgd::to_string(algorithm)), values);
  }
  fill_inputs(values, rank);
  dsgd::measure::mpi::mpi_allreduce(comm, {values.data(), values.size()});
  check_sums(comm, "MPI_Allreduce", values);
  int token = rank;
  int received = -1;
  auto receive = comm.irecv((rank - 1 + n) % n, 5, &received, sizeof received, Category::kNetwork);
  comm.send((rank + 1) % n, 5, &token, sizeof token, Category::kNetwork);
  receive->wait();
  if (received != (rank - 1 + n) % n) throw dsgd::InternalError("selftest: ring message has the wrong value");
  comm.barrier();
  if (rank == 0) {
    std::printf("dsgd-mpi selftest: %d ranks ok (%s)\n", n, dsgd::measure::mpi::mpi_library_version().c_str());
    std::fflush(stdout);
  }
}

// --- run ------------------------------------------------------------------------------------------------------

// Every rank loads the data and trains; rank 0 prints progress and writes the results.
void train(const dsgd::app::RunCli& cli, const dsgd::WorldOptions& world, const std::string& command) {
  dsgd::algorithms::check_run_options(cli.run);
  const auto data = dsgd::app::load_run_data(cli);
  dsgd::algorithms::RunResult result;
  const auto worker = dsgd::algorithms::training_worker(cli.run, data, &result, [](const auto& point) {
    std::fputs(dsgd::app::progress_line(point).c_str(), stderr);
  });
  int rank = 0;
  dsgd::measure::mpi::run_mpi_worker(world, [&](dsgd::Comm& comm) {
    rank = comm.rank();
    if (comm.size() != dsgd::algorithms::world_size(cli.run)) {
      throw dsgd::InputError("run: " + cli.run.algorithm + " with " + std::to_string(cli.run.workers) +
                             " workers needs " + std::to_string(dsgd::algorithms::world_size(cli.run)) +
                             " ranks, mpirun started " + std::to_string(comm.size()));
    }
    worker(comm);
  });
  if (rank != 0 || cli.results.empty()) return;
  auto results = new_results(command);
  results.benchmarks.push_back(dsgd::app::run_entry(cli, result, "mpi"));
  dsgd::reports::write_results(cli.results, results);
}

// --- command line ---------------------------------------------------------------------------------------------

template <typename T>
std::vector<T> parse_list(const std::string& text, const char* option) {
  std::vector<T> values;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      std::size_t used = 0;
      const double value = std::stod(item, &used);
      if (used != item.size() || value < 0) throw std::invalid_argument(item);
      values.push_back(static_cast<T>(value));
    } catch (const std::exception&) {
      throw dsgd::InputError(std::string(option) + ": '" + item + "' is not a non-negative number");
    }
  }
  return values;
}

int run(int argc, char** argv, int world_rank) {
  CLI::App app{"dsgd-mpi: the MPI side of dsgd, run under mpirun (dsgd starts it for `dsgd calibrate`)", "dsgd-mpi"};
  app.require_subcommand(1);
  double timeout_s = 60;
  app.add_option("--timeout", timeout_s, "Seconds any rank waits for another before failing")->capture_default_str();

  PingPongOptions pingpong_options;
  std::string boundaries;
  auto* pingpong_command = app.add_subcommand("pingpong", "Ping-pong between ranks 0 and 1, 8 B .. 64 MiB, and its alpha-beta fit");
  pingpong_command->add_option("--min-bytes", pingpong_options.min_bytes, "Smallest message")->capture_default_str();
  pingpong_command->add_option("--max-bytes", pingpong_options.max_bytes, "Largest message")->capture_default_str();
  pingpong_command->add_option("--rounds", pingpong_options.rounds, "Timed sweeps over all sizes")->capture_default_str();
  pingpong_command->add_option("--results", pingpong_options.results, "Write the results (JSON) here");
  pingpong_command->add_flag("--quiet", pingpong_options.quiet, "Print nothing but errors");
  pingpong_command->add_flag("--busy", pingpong_options.busy, "Ranks 2 and up compute meanwhile instead of idling");
  pingpong_command
      ->add_option("--think", pingpong_options.think_s,
                   "Rank 0 computes this many seconds before each round trip (one a sample) while rank 1 waits")
      ->capture_default_str();
  pingpong_command
      ->add_option("--pool-bytes", pingpong_options.pool_bytes,
                   "Cycle through buffers of this many bytes, so messages start cold in memory (0: one warm buffer)")
      ->capture_default_str();
  pingpong_command->add_option("--boundaries", boundaries, "Segment boundaries in bytes for the printed fit, e.g. 4096,65536");

  AllreduceOptions allreduce_options;
  std::string sizes;
  std::string variants;
  auto* allreduce_command = app.add_subcommand("allreduce", "dsgd's allreduce algorithms against MPI_Allreduce at DeepBench's sizes");
  allreduce_command->add_option("--sizes", sizes, "Sizes in floats, comma-separated (default: DeepBench's)");
  allreduce_command->add_option("--max-floats", allreduce_options.max_floats, "Leave out sizes above this");
  allreduce_command->add_option("--rounds", allreduce_options.rounds, "Timed rounds (variants alternate within each)")->capture_default_str();
  allreduce_command->add_option("--algorithms", variants,
                                "Comma-separated: ring, recursive_doubling, rabenseifner, reduce_broadcast, mpi (default: all)");
  allreduce_command->add_option("--results", allreduce_options.results, "Write the results (JSON) here");

  WaitingOptions waiting_options;
  auto* waiting_command = app.add_subcommand("waiting", "Share of a core rank 0 takes waiting while the others compute");
  waiting_command->add_option("--seconds", waiting_options.seconds, "How long the others compute")->capture_default_str();
  waiting_command->add_option("--results", waiting_options.results, "Write the results (JSON) here");

  SelftestOptions selftest_options;
  auto* selftest_command = app.add_subcommand("selftest", "Quick end-to-end check of the MPI executor");
  selftest_command->add_option("--fail-rank", selftest_options.fail_rank, "This rank fails on purpose (tests the abort path)");

  dsgd::app::RunCli run_cli;
  auto* run_command = app.add_subcommand("run", "Training with an algorithm of the catalog (as `dsgd run`)");
  dsgd::app::add_run_options(*run_command, run_cli);
  run_command->add_option("--results", run_cli.results, "Write the results (JSON) here");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same arguments and returns the same code, so MPI_Finalize still meets everyone.
    if (world_rank == 0) {
      if (e.get_exit_code() == 0) {
        std::cout << app.help();
      } else {
        std::cerr << "dsgd-mpi: " << e.what() << " (run `dsgd-mpi --help`)\n";
      }
    }
    return e.get_exit_code() == 0 ? kExitOk : kExitUsage;
  }

  if (!boundaries.empty()) pingpong_options.boundaries = parse_list<double>(boundaries, "--boundaries");
  if (!sizes.empty()) allreduce_options.sizes = parse_list<std::size_t>(sizes, "--sizes");
  if (!variants.empty()) {
    allreduce_options.variants.clear();
    std::istringstream in(variants);
    for (std::string item; std::getline(in, item, ',');) allreduce_options.variants.push_back(item);
  }

  dsgd::WorldOptions world;
  world.timeout_s = timeout_s;
  const std::string command = command_line(argc, argv);
  if (*run_command) {
    train(run_cli, world, command);
    return kExitOk;
  }
  dsgd::measure::mpi::run_mpi_worker(world, [&](dsgd::Comm& base) {
    auto& comm = dynamic_cast<MpiComm&>(base);  // run_mpi_worker hands out an MpiComm
    if (*pingpong_command) pingpong(comm, pingpong_options, command);
    if (*allreduce_command) allreduce_sweep(comm, allreduce_options, command);
    if (*waiting_command) waiting(comm, waiting_options, command);
    if (*selftest_command) selftest(comm, selftest_options);
  });
  return kExitOk;
}

int exit_code(const std::exception& e) {
  if (dynamic_cast<const dsgd::InputError*>(&e)) return kExitUsage;
  if (dynamic_cast<const dsgd::InternalError*>(&e)) return kExitInternal;
  if (dynamic_cast<const dsgd::Error*>(&e)) return kExitFailure;
  return kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<dsgd::measure::mpi::MpiSession> session;
  try {
    session = std::make_unique<dsgd::measure::mpi::MpiSession>(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dsgd-mpi: %s\n", e.what());
    return kExitFailure;
  }
  const int rank = session->world_rank();
  try {
    return run(argc, argv, rank);
  } catch (const std::exception& e) {
    // One line naming the rank, then end every rank: the others may be waiting for this one.
    std::fprintf(stderr, "dsgd-mpi: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code(e));
  }
  return kExitFailure;  // not reached: MPI_Abort does not return
}
