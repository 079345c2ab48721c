// `dsgd bench gemm`: seed 001's distributed GEMM (algorithms/dmath/) measured on threads or under mpirun, or
// predicted in SimGrid on a platform, beside OpenBLAS sgemm of the whole product in one process (docs/dmath.md).

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "algorithms/dmath/gemm_entry.hpp"
#include "algorithms/dmath/table5.hpp"
#include "app/commands.hpp"
#include "app/executors.hpp"
#include "app/gemm_bench_cli.hpp"
#include "app/mpi_worker.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"
#include "core/stats.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "simulate/dmath_table5.hpp"
#include "simulate/scaling_study.hpp"
#include "simulate/simgrid/executor.hpp"

namespace dsgd::app {

namespace {

namespace dmath = algorithms::dmath;

struct GemmBenchCli {
  GemmCli gemm;
  std::string executor = "threads";
  std::vector<int> ranks = {2};
  std::string platform;  // simgrid: where to simulate
  std::string predict;   // threads, mpi: also simulate every point on this platform
  int ranks_per_node = 0;
  bool baseline = true;  // OpenBLAS sgemm of the whole product on 1 and R threads
  std::string study;     // "table5": seed 001 Table V predicted on k80-dmath
  std::string results;
  double timeout_s = 600;
  double memory_limit_bytes = 0;
  measure::mpi::MpiLaunchOptions launcher;  // mpi
};

dmath::GemmBenchOptions point_options(const GemmBenchCli& cli, std::int64_t size) {
  auto options = cli.gemm.bench;
  options.size = size;
  return options;
}

reports::Entry measure_on_threads(const GemmBenchCli& cli, const dmath::GemmBenchOptions& options, int ranks) {
  std::vector<dmath::GemmRankResult> all(static_cast<std::size_t>(ranks));
  WorldOptions world;
  world.size = ranks;
  world.timeout_s = cli.timeout_s;
  measure::threads::run(
      world, [&](Comm& comm) { all[static_cast<std::size_t>(comm.rank())] = dmath::run_gemm_bench(comm, options); });
  return dmath::to_entry(options, all, "threads", "measured",
                         dmath::make_blas_gemm(options.threads_per_rank)->description());
}

// One dsgd-mpi launch per rank count, every size in it; rank 0's results file comes back.
std::vector<reports::Entry> measure_under_mpirun(const GemmBenchCli& cli, int ranks, Context& context) {
  WorkerLaunch launch;
  launch.command = "bench";
  launch.what = "dsgd-mpi gemm";
  launch.ranks = ranks;
  launch.launcher = cli.launcher;
  launch.program = {measure::mpi::worker_executable().string(), "--timeout", std::to_string(cli.timeout_s), "gemm"};
  const auto arguments = gemm_arguments(cli.gemm);
  launch.program.insert(launch.program.end(), arguments.begin(), arguments.end());
  launch.timeout_s = cli.timeout_s * static_cast<double>(cli.gemm.sizes.size());
  return run_worker(launch, context).results.benchmarks;
}

// Refuses, before anything runs, a point whose world (all ranks on this machine) or baseline will not fit.
void check_points(const GemmBenchCli& cli, bool measured) {
  for (const int ranks : cli.ranks) {
    for (const auto size : cli.gemm.sizes) {
      const auto options = point_options(cli, size);
      dmath::check_gemm_bench(options, ranks);
      if (!measured) continue;
      auto estimate = dmath::estimate_gemm_bench_memory(options, ranks);
      if (cli.baseline) {
        const double whole = 3.0 * sizeof(float) * static_cast<double>(size) * static_cast<double>(size);
        estimate.total_bytes = std::max(estimate.total_bytes, whole);
      }
      algorithms::check_memory(estimate, cli.memory_limit_bytes,
                               "bench gemm: size " + std::to_string(size) + " on " + std::to_string(ranks) + " ranks",
                               "smaller --sizes or fewer --ranks");
    }
  }
}

const reports::Entry* find_entry(const reports::Results& results, const std::string& executor,
                                 const std::string& algorithm, double size, std::int64_t ranks, double threads = 0) {
  for (const auto& entry : results.benchmarks) {
    if (entry.executor == executor && entry.algorithm == algorithm && entry.counters.at("size") == size &&
        (threads > 0 ? entry.counters.at("threads_per_rank") == threads : entry.ranks == ranks))
      return &entry;
  }
  return nullptr;
}

// Measured: each point beside OpenBLAS on the whole product and, with --predict, its prediction. Simulated: each
// point's speed-up over the same size on one rank, where --ranks has 1.
void print_table(const GemmBenchCli& cli, const reports::Results& results, bool measured, Context& context) {
  char line[320];
  std::snprintf(line, sizeof line, "gemm (%s), %s executor%s: median of %d products, slowest rank\n",
                cli.gemm.algorithm.c_str(), cli.executor.c_str(),
                measured ? "" : (", predicted on " + cli.platform).c_str(), cli.gemm.bench.rounds);
  context.out << line;
  if (measured) {
    std::snprintf(line, sizeof line, "%7s %6s %11s %9s %9s %10s %10s %10s %11s %12s %8s\n", "size", "ranks", "time (s)",
                  "GFLOP/s", "speed-up", "sgemm 1T", "sgemm RT", "MiB/rank", "rel. error", "predicted s", "error");
  } else {
    std::snprintf(line, sizeof line, "%7s %6s %11s %9s %9s %11s %10s %8s\n", "size", "ranks", "time (s)", "GFLOP/s",
                  "speed-up", "efficiency", "MiB/rank", "level");
  }
  context.out << line;
  const std::string executor = measured ? cli.executor : "simgrid";
  for (const int ranks : cli.ranks) {
    for (const auto size : cli.gemm.sizes) {
      const auto extent = static_cast<double>(size);
      const auto* point = find_entry(results, executor, cli.gemm.algorithm, extent, ranks);
      if (point == nullptr) continue;
      const double mib = point->counters.at("bytes_sent_per_rank") / (1024.0 * 1024.0);
      const double gflops = point->counters.at("gflops");
      if (!measured) {
        const auto* one = find_entry(results, "simgrid", cli.gemm.algorithm, extent, 1);
        const double speedup = one == nullptr ? 0 : one->real_time / point->real_time;
        std::snprintf(line, sizeof line, "%7lld %6d %11.5g %9.1f %9s %11s %10.1f %8s\n", static_cast<long long>(size),
                      ranks, point->real_time, gflops, one == nullptr ? "-" : fixed(speedup, 2).c_str(),
                      one == nullptr ? "-" : (fixed(100.0 * speedup / ranks, 1) + "%").c_str(), mib,
                      point->fidelity.c_str());
        context.out << line;
        continue;
      }
      const auto* one = find_entry(results, "threads", "sgemm", extent, 1, 1);
      const auto* all = find_entry(results, "threads", "sgemm", extent, 1, ranks);
      const auto* predicted = find_entry(results, "simgrid", cli.gemm.algorithm, extent, ranks);
      const auto rate = [](const reports::Entry* entry) {
        return entry == nullptr ? std::string("-") : fixed(entry->counters.at("gflops"), 1);
      };
      const auto error = point->counters.find("relative_error");
      std::snprintf(
          line, sizeof line, "%7lld %6d %11.5g %9.1f %9s %10s %10s %10.1f %11s %12s %8s\n",
          static_cast<long long>(size), ranks, point->real_time, gflops,
          one == nullptr ? "-" : fixed(one->real_time / point->real_time, 2).c_str(), rate(one).c_str(),
          rate(all).c_str(), mib, error == point->counters.end() ? "-" : significant(error->second, 2).c_str(),
          predicted == nullptr ? "-" : significant(predicted->real_time, 4).c_str(),
          predicted == nullptr
              ? "-"
              : (fixed(100.0 * (predicted->real_time - point->real_time) / point->real_time, 1) + "%").c_str());
      context.out << line;
    }
  }
  if (measured) {
    context.out << "speed-up: sgemm on 1 thread over this; sgemm 1T / RT: OpenBLAS on the whole product, 1 and R "
                   "threads (GFLOP/s); rel. error: max |C - R| / (k max|A| max|B|), bound "
                << significant(dmath::gemm_error_bound(cli.gemm.bench.gemm), 3)
                << (cli.gemm.bench.gemm.half_transfer ? " (fp16 transfers)" : "") << "\n";
  } else {
    context.out << "speed-up and efficiency: over the same size on 1 rank; level: the simulation's fidelity\n";
  }
}

// Every cell of Table V predicted (simulate/dmath_table5.hpp), printed beside the published ones.
void table5_study(Context& context, const GemmBenchCli& cli) {
  const auto study =
      simulate::predict_table5(cli.platform.empty() ? "k80-dmath" : cli.platform, cli.ranks_per_node, cli.timeout_s);
  char line[320];
  context.out << "seed 001 Table V on " << study.platform << " (" << study.gpus_per_server
              << " GPUs per server), cyclic with kept blocks, seconds per product (kept: the rotated blocks kept, "
                 "where they fit)\n";
  std::snprintf(line, sizeof line, "%7s %5s %12s %12s %8s %12s %10s %5s  %s\n", "size", "GPUs", "predicted s",
                "published s", "diff", "cuBLAS-XT s", "row", "kept", "note");
  context.out << line;
  const auto text = [](const reports::Entry& entry, const char* counter, int digits) {
    const auto found = entry.counters.find(counter);
    return found == entry.counters.end() ? std::string("-") : significant(found->second, digits);
  };
  for (const auto& entry : study.results.benchmarks) {
    if (entry.labels.at("kind") != "point") continue;
    const bool fits = entry.labels.at("role") != "does not fit";
    const auto diff = entry.counters.find("diff_percent");
    std::snprintf(line, sizeof line, "%7s %5.0f %12s %12s %8s %12s %10s %5s  %s\n", entry.labels.at("size").c_str(),
                  entry.counters.at("gpus"), text(entry, "predicted_seconds", 4).c_str(),
                  text(entry, "published_seconds", 4).c_str(),
                  diff == entry.counters.end() ? "-" : (fixed(diff->second, 1) + "%").c_str(),
                  text(entry, "cublasxt_seconds", 4).c_str(), entry.labels.at("role").c_str(),
                  entry.labels.at("kept_blocks").c_str(), fits ? "" : entry.labels.at("note").c_str());
    context.out << line;
  }
  context.out << "FITTED " << study.efficiency_parameter << " = " << significant(study.efficiency, 4) << ", on "
              << study.fitted_on << "; every " << (study.fitted_here ? "other " : "")
              << "cell is predicted. published: cuBLAS on 1 GPU, dMath on 2-32\n";
  if (!cli.results.empty()) {
    auto results = new_results(context);
    results.benchmarks = study.results.benchmarks;
    reports::write_results(cli.results, results);
  }
}

void bench_gemm(Context& context, GemmBenchCli cli) {
  if (cli.study == "table5") return table5_study(context, std::move(cli));
  if (!cli.study.empty()) throw UnknownNameError("gemm study", cli.study, {"table5"});
  static const std::vector<std::string> accepted = {"threads", "simgrid", "mpi"};
  const Executor& executor = find_executor(cli.executor, accepted);
  resolve_gemm_cli(cli.gemm);
  if (cli.ranks.empty()) throw InputError("bench gemm: --ranks names no rank count");
  const bool measured = executor.kind != ExecutorKind::kSimgrid;
  if (!measured && cli.platform.empty()) {
    throw InputError("bench gemm: --executor simgrid needs --platform (a catalog name or a platform file)");
  }
  check_points(cli, measured);
  if (executor.kind == ExecutorKind::kMpi) {
    for (const int ranks : cli.ranks) measure::mpi::check_launch(cli.launcher, ranks);
  }
  const std::string platform_name = measured ? cli.predict : cli.platform;
  std::optional<platforms::Platform> platform;
  simulate::PlacementOptions placement;
  placement.ranks_per_node = cli.ranks_per_node > 0 ? cli.ranks_per_node : 1;
  if (!platform_name.empty()) {
    platform = platforms::load_platform(platform_name);
    for (const int ranks : cli.ranks) simulate::place_ranks(*platform, ranks, placement);  // too many: InputError
  }

  auto results = new_results(context);
  for (const int ranks : cli.ranks) {
    if (executor.kind == ExecutorKind::kMpi) {
      for (auto& entry : measure_under_mpirun(cli, ranks, context)) results.benchmarks.push_back(std::move(entry));
    }
    for (const auto size : cli.gemm.sizes) {
      const auto options = point_options(cli, size);
      if (executor.kind == ExecutorKind::kThreads)
        results.benchmarks.push_back(measure_on_threads(cli, options, ranks));
      if (platform)
        results.benchmarks.push_back(
            simulate::simulate_gemm_point(*platform, placement, options, ranks, cli.timeout_s));
      context.err << "bench: gemm " << size << " on " << ranks << " ranks done" << std::endl;
    }
  }
  if (measured && cli.baseline) {
    std::set<int> threads = {1};
    threads.insert(cli.ranks.begin(), cli.ranks.end());
    for (const auto size : cli.gemm.sizes) {
      for (const int count : threads)
        results.benchmarks.push_back(dmath::sgemm_baseline(point_options(cli, size), count));
    }
  }
  if (!cli.results.empty()) reports::write_results(cli.results, results);
  print_table(cli, results, measured, context);
}

}  // namespace

void register_bench_gemm_command(CLI::App& bench, Context& context) {
  auto cli = std::make_shared<GemmBenchCli>();
  auto* command = bench.add_subcommand(
      "gemm", "Distributed GEMM of seed 001 (dMath's cyclic, SUMMA): GFLOP/s beside OpenBLAS sgemm, checked");
  command->add_option("--executor", cli->executor, "threads, mpi or simgrid")->capture_default_str();
  command->add_option("--ranks", cli->ranks, "Rank counts, e.g. 1,2")->delimiter(',')->capture_default_str();
  add_gemm_options(*command, cli->gemm);
  command->add_option("--platform", cli->platform, "simgrid: catalog name or platform file");
  command->add_option("--predict", cli->predict,
                      "threads, mpi: also predict every point in SimGrid on this platform (e.g. this-machine)");
  command->add_option("--ranks-per-node", cli->ranks_per_node, "simulation: ranks per node of the platform (0: one)")
      ->capture_default_str();
  command->add_flag("--no-baseline{false}", cli->baseline, "Skip OpenBLAS sgemm of the whole product");
  command->add_option("--study", cli->study,
                      "table5: seed 001 Table V predicted on k80-dmath beside the published times (one FITTED rate)");
  command->add_option("--results", cli->results, "Write the results (JSON) here")->check(output_file_check());
  command->add_option("--timeout", cli->timeout_s, "Seconds before a wait gives up")->capture_default_str();
  add_memory_limit_option(*command, cli->memory_limit_bytes);
  add_launch_options(*command, cli->launcher);
  command->callback([&context, cli] { bench_gemm(context, *cli); });
}

}  // namespace dsgd::app
