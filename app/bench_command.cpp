// `dsgd bench allreduce`: one microbenchmark, three executors. The same collectives (core/collectives.cpp) run on
// threads (measured), under mpirun through dsgd-mpi (measured, beside MPI_Allreduce) or in SimGrid on a platform
// (simulated, beside the closed form), and come out in one table and one results format.

#include <algorithm>
#include <cstdio>
#include <optional>

#include "app/commands.hpp"
#include "app/executors.hpp"
#include "app/mpi_worker.hpp"
#include "app/run_common.hpp"
#include "core/collectives.hpp"
#include "core/stats.hpp"
#include "measure/allreduce_sweep.hpp"
#include "measure/background_load.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/suspect.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "simulate/allreduce_sweep.hpp"

namespace dsgd::app {

namespace {

// DeepBench's allreduce sizes, in floats (the sweep).
const std::vector<std::size_t> kDeepBenchFloats = {100000, 3097600, 4194304, 6553600, 16777217, 38360000, 64500000};

struct BenchOptions {
  std::string executor = "threads";
  int ranks = 2;
  std::vector<std::size_t> sizes = kDeepBenchFloats;
  std::size_t max_floats = 0;
  std::vector<std::string> algorithms;
  int rounds = 5;
  std::string platform;
  // Ranks per node: simgrid's placement (0: one per node, every message on the network); threads and mpi group the
  // ranks into nodes of this many for the hierarchical allreduces (0: threads one node, mpi the real nodes).
  int ranks_per_node = 0;
  std::string fidelity = "auto";
  std::string results;
  double timeout_s = 600;
  measure::mpi::MpiLaunchOptions launcher;  // mpi
};

// measure/allreduce_sweep.hpp's sweep in one world of threads.
void bench_threads(const BenchOptions& options, const std::vector<AllreduceAlgorithm>& algorithms,
                   reports::Results& results, Context& context) {
  measure::AllreduceSweepOptions sweep_options{options.sizes, {}, options.rounds};
  for (const auto algorithm : algorithms) sweep_options.variants.emplace_back(to_string(algorithm));
  WorldOptions world;
  world.size = options.ranks;
  world.timeout_s = options.timeout_s;
  world.ranks_per_node = options.ranks_per_node;
  measure::AllreduceSweep sweep;
  measure::threads::run(world, [&](Comm& comm) {
    auto mine = measure::allreduce_sweep(comm, sweep_options);
    if (comm.rank() == 0) sweep = std::move(mine);
  });
  for (auto& entry : measure::to_entries(sweep, "threads")) results.benchmarks.push_back(std::move(entry));
  context.err << "bench: threads, " << options.sizes.size() << " sizes done" << std::endl;
}

// Simulated time of each collective alone (size-only: no buffers), and the closed form beside it.
void bench_simgrid(const BenchOptions& options, const std::vector<AllreduceAlgorithm>& algorithms,
                   reports::Results& results, Context& context) {
  if (options.platform.empty()) {
    throw InputError(
        "bench: --executor simgrid needs --platform (a catalog name or a platform file, e.g. one "
        "written by `dsgd calibrate`)");
  }
  const auto platform = platforms::load_platform(options.platform);
  simulate::SimulatedSweepOptions sweep;
  sweep.ranks = options.ranks;
  sweep.sizes = options.sizes;
  sweep.algorithms = algorithms;
  if (options.ranks_per_node > 0) sweep.ranks_per_node = options.ranks_per_node;
  sweep.fidelity = simulate::fidelity_from_string(options.fidelity);
  sweep.timeout_s = options.timeout_s;
  for (auto& entry : simulate::simulate_allreduce_sweep(platform, sweep, &context.err)) {
    results.benchmarks.push_back(std::move(entry));
  }
}

// dsgd links SimGrid, so the MPI side runs as dsgd-mpi under mpirun; its results file is read back.
void bench_mpi(const BenchOptions& options, const std::vector<AllreduceAlgorithm>& algorithms,
               reports::Results& results, Context& context) {
  std::string sizes;
  for (const auto floats : options.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(floats);
  std::string names = "mpi";
  for (const auto algorithm : algorithms) names += "," + std::string(to_string(algorithm));
  WorkerLaunch launch;
  launch.command = "bench";
  launch.what = "dsgd-mpi allreduce";
  launch.ranks = options.ranks;
  launch.launcher = options.launcher;
  launch.program = {measure::mpi::worker_executable().string(),
                    "allreduce",
                    "--sizes",
                    sizes,
                    "--algorithms",
                    names,
                    "--rounds",
                    std::to_string(options.rounds)};
  // dsgd-mpi's own option, before its subcommand.
  launch.program.insert(launch.program.begin() + 1, {"--ranks-per-node", std::to_string(options.ranks_per_node)});
  launch.timeout_s = options.timeout_s;
  const auto measured = run_worker(launch, context).results;
  for (auto entry : measured.benchmarks) {
    entry.executor = "mpi";
    results.benchmarks.push_back(entry);
  }
}

void bench_allreduce(Context& context, BenchOptions options) {
  static const std::vector<std::string> accepted = {"threads", "simgrid", "mpi"};
  const Executor& executor = find_executor(options.executor, accepted);
  if (options.ranks < 1) throw InputError("bench: --ranks must be at least 1, got " + std::to_string(options.ranks));
  if (options.rounds < 1) throw InputError("bench: --rounds must be at least 1, got " + std::to_string(options.rounds));
  if (options.max_floats > 0) std::erase_if(options.sizes, [&](std::size_t n) { return n > options.max_floats; });
  if (options.sizes.empty()) throw InputError("bench: no sizes left (check --sizes and --max-floats)");
  std::vector<AllreduceAlgorithm> algorithms;
  for (const auto& name : options.algorithms) algorithms.push_back(allreduce_algorithm_from_string(name));
  if (algorithms.empty()) algorithms.assign(kAllreduceAlgorithms.begin(), kAllreduceAlgorithms.end());

  auto results = new_results(context);
  const auto start = measure::CpuClock::now();
  switch (executor.kind) {
    case ExecutorKind::kThreads:
      bench_threads(options, algorithms, results, context);
      break;
    case ExecutorKind::kSimgrid:
      bench_simgrid(options, algorithms, results, context);
      break;
    case ExecutorKind::kMpi:
      bench_mpi(options, algorithms, results, context);
      break;
  }
  // A simulation's times are the platform's; a measurement's are this machine's, which other programs may slow.
  const std::string busy = executor.kind == ExecutorKind::kSimgrid
                               ? ""
                               : measure::busy_machine_warning(measure::CpuClock::now().others_cores_since(start));
  if (!busy.empty()) {
    measure::mark_suspect(results.benchmarks, busy);
  }
  if (!options.results.empty()) reports::write_results(options.results, results);

  char line[200];
  if (executor.kind == ExecutorKind::kSimgrid) {
    const std::string fidelity = results.benchmarks.empty() ? options.fidelity : results.benchmarks.front().fidelity;
    std::snprintf(line, sizeof line,
                  "allreduce, simgrid executor on %s, %d ranks (simulated, size-only, %s fidelity)\n",
                  options.platform.c_str(), options.ranks, fidelity.c_str());
  } else {
    std::snprintf(line, sizeof line,
                  "allreduce, %s executor, %d ranks (%d rounds; time: the slowest rank's, median and range)\n",
                  options.executor.c_str(), options.ranks, options.rounds);
  }
  context.out << line;
  // nccl-tests' columns: bytes, microseconds, algbw and busbw in GB/s.
  std::snprintf(line, sizeof line, "%-20s %12s %12s %12s %12s %11s %11s %15s\n", "algorithm", "bytes", "time us",
                "min us", "max us", "algbw GB/s", "busbw GB/s", "closed form us");
  context.out << line;
  for (const auto& entry : results.benchmarks) {
    const auto closed = entry.counters.find("closed_form_s");
    char closed_text[32] = "-";
    if (closed != entry.counters.end()) std::snprintf(closed_text, sizeof closed_text, "%.1f", closed->second * 1e6);
    std::snprintf(line, sizeof line, "%-20s %12.0f %12.1f %12.1f %12.1f %11.3f %11.3f %15s\n", entry.algorithm.c_str(),
                  entry.counters.at("bytes"), entry.real_time * 1e6, entry.counters.at("seconds_min") * 1e6,
                  entry.counters.at("seconds_max") * 1e6, entry.counters.at("algbw_Bps") / 1e9,
                  entry.counters.at("busbw_Bps") / 1e9, closed_text);
    context.out << line;
  }
  if (!busy.empty()) context.out << busy << '\n';
}

}  // namespace

void register_bench_command(CLI::App& app, Context& context) {
  auto* bench = app.add_subcommand("bench", "Microbenchmarks, on any executor");
  bench->require_subcommand(1);
  auto options = std::make_shared<BenchOptions>();
  auto* allreduce_command = bench->add_subcommand(
      "allreduce", "dsgd's allreduce algorithms at DeepBench's sizes: algbw and busbw (nccl-tests definitions)");
  allreduce_command->add_option("--executor", options->executor, "threads, simgrid or mpi")->capture_default_str();
  allreduce_command->add_option("--ranks", options->ranks, "Workers")->capture_default_str();
  allreduce_command->add_option("--sizes", options->sizes, "Sizes in floats (default: DeepBench's)")->delimiter(',');
  allreduce_command->add_option("--max-floats", options->max_floats, "Leave out sizes above this");
  allreduce_command
      ->add_option("--algorithms", options->algorithms,
                   "ring, recursive_doubling, rabenseifner, reduce_broadcast, hierarchical, hierarchical_2d (default: "
                   "all)")
      ->delimiter(',');
  allreduce_command->add_option("--rounds", options->rounds, "Timed rounds (measured executors)")
      ->capture_default_str();
  allreduce_command->add_option("--platform", options->platform, "simgrid: catalog name or platform file");
  allreduce_command
      ->add_option("--ranks-per-node", options->ranks_per_node,
                   "simgrid: ranks per node (0: one); threads, mpi: nodes of this many for the hierarchical "
                   "allreduces (0: threads one node, mpi the real nodes)")
      ->capture_default_str();
  allreduce_command
      ->add_option(
          "--fidelity", options->fidelity,
          "simgrid: message, flow, or auto (flow from " + std::to_string(simulate::kFlowFromRanks) + " ranks on)")
      ->capture_default_str();
  allreduce_command->add_option("--results", options->results, "Write the results (JSON) here")
      ->check(output_file_check());
  allreduce_command->add_option("--timeout", options->timeout_s, "Seconds before a wait or a run gives up")
      ->capture_default_str();
  allreduce_command->callback([&context, options] { bench_allreduce(context, *options); });
  add_launch_options(*allreduce_command, options->launcher);
  register_bench_gemm_command(*bench, context);
  register_bench_transports_command(*bench, context);
  register_bench_roofline_command(*bench, context);
  register_bench_layers_command(*bench, context);
}

}  // namespace dsgd::app
