// `dsgd bench transports`: how fast bytes move on this node, by transport and message size (seed 001 Tables I-II;
// docs/transports.md): host memcpy and, on a GPU, the CUDA copies (measure/transports.hpp), the threads executor's
// messages and MPI's shared memory (their ping-pongs), each platform link's alpha-beta prediction with --predict,
// and seed 001's published latencies and bandwidths beside them.

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "app/cli_units.hpp"
#include "app/commands.hpp"
#include "app/mpi_worker.hpp"
#include "core/format.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/threads_pingpong.hpp"
#include "measure/transport_entries.hpp"
#include "platforms/catalog.hpp"

namespace dsgd::app {

namespace {

struct TransportsCli {
  double max_bytes = 64.0 * 1024 * 1024;
  bool threads = true;
  bool mpi = true;
  std::vector<std::string> predict;  // platforms whose network link is priced at every size
  std::string results;
  double timeout_s = 600;
  measure::mpi::MpiLaunchOptions launcher;
};

void bench_transports(Context& context, const TransportsCli& cli) {
  if (!(cli.max_bytes >= 1)) throw InputError("bench transports: --max-bytes must be at least 1");
  if (cli.mpi) measure::mpi::check_launch(cli.launcher, 2);
  std::vector<platforms::Platform> platforms;
  for (const auto& name : cli.predict) platforms.push_back(platforms::load_platform(name));
  const auto sizes = measure::transport_sizes(static_cast<std::size_t>(cli.max_bytes));
  const std::set<double> wanted(sizes.begin(), sizes.end());
  auto results = new_results(context);

  for (const auto& transport : measure::local_transports()) {
    for (const std::size_t bytes : sizes) {
      const auto point = measure::time_transport(transport, bytes);
      results.benchmarks.push_back(measure::to_entry(transport, point));
    }
    context.err << "bench: " << transport.name << " done" << std::endl;
  }
  if (cli.threads) {
    measure::ThreadsPingPongOptions options;
    options.min_bytes = 1;
    options.max_bytes = cli.max_bytes;
    options.rounds = 5;
    for (const auto& point : measure::threads_pingpong(options)) {
      if (!wanted.contains(point.bytes)) continue;
      results.benchmarks.push_back(
          measure::transport_entry("threads", "threads", "measured", point.bytes, point.round_trip_s / 2,
                                   "dsgd's threads executor: a message between two threads (half "
                                   "the median round trip)"));
    }
    context.err << "bench: threads ping-pong done" << std::endl;
  }
  if (cli.mpi) {
    WorkerLaunch launch;
    launch.command = "bench";
    launch.what = "dsgd-mpi pingpong";
    launch.ranks = 2;
    launch.launcher = cli.launcher;
    launch.program = {measure::mpi::worker_executable().string(),
                      "pingpong",
                      "--min-bytes",
                      "1",
                      "--max-bytes",
                      fixed(cli.max_bytes, 0),
                      "--rounds",
                      "5",
                      "--quiet"};
    launch.timeout_s = cli.timeout_s;
    for (const auto& measured : run_worker(launch, context).results.benchmarks) {
      const double bytes = measured.counters.at("bytes");
      if (!wanted.contains(bytes)) continue;
      results.benchmarks.push_back(measure::transport_entry(
          "mpi", "mpi", "measured", bytes, measured.counters.at("one_way_s"),
          "MPI between 2 ranks: " + measured.labels.at("transport") + " (half the median round trip)"));
    }
  }
  for (const auto& platform : platforms) {
    const auto& link = platform.network.link;
    for (const std::size_t bytes : sizes) {
      const auto n = static_cast<double>(bytes);
      results.benchmarks.push_back(
          measure::transport_entry("predicted: " + platform.name, "analytic", "analytic", n, link.message_s(n),
                                   "alpha-beta of platform " + platform.name + "'s link " + link.name));
    }
  }
  for (auto& entry : measure::seed001_transport_entries()) results.benchmarks.push_back(std::move(entry));
  if (!cli.results.empty()) reports::write_results(cli.results, results);

  // One column per transport: latency (us) and bandwidth (MB/s) at each size.
  std::vector<std::string> order;
  std::map<std::pair<std::string, double>, const reports::Entry*> cells;
  for (const auto& entry : results.benchmarks) {
    const auto& transport = entry.labels.at("transport");
    if (std::find(order.begin(), order.end(), transport) == order.end()) order.push_back(transport);
    cells[{transport, entry.counters.at("bytes")}] = &entry;
  }
  context.out << "transports on this node: one-way latency (us) / bandwidth (MB/s) by message size\n";
  for (const auto& transport : order) {
    context.out << transport << "\n";
    for (const std::size_t bytes : sizes) {
      const auto cell = cells.find({transport, static_cast<double>(bytes)});
      if (cell == cells.end()) continue;
      char line[160];
      std::snprintf(line, sizeof line, "  %10zu B %12.3f us %12.1f MB/s\n", bytes,
                    cell->second->counters.at("latency_us"), cell->second->counters.at("bandwidth_MBps"));
      context.out << line;
    }
  }
}

}  // namespace

void register_bench_transports_command(CLI::App& bench, Context& context) {
  auto cli = std::make_shared<TransportsCli>();
  auto* command = bench.add_subcommand(
      "transports", "Latency and bandwidth by message size of each transport here (seed 001 Tables I-II beside)");
  add_bytes_option(*command, "--max-bytes", cli->max_bytes, "Largest message");
  command->add_flag("--no-threads{false}", cli->threads, "Leave out the threads executor's ping-pong");
  command->add_flag("--no-mpi{false}", cli->mpi, "Leave out MPI's ping-pong (dsgd-mpi under mpirun)");
  command->add_option("--predict", cli->predict, "Platforms whose link to price at every size")->delimiter(',');
  command->add_option("--results", cli->results, "Write the results (JSON) here")->check(output_file_check());
  command->add_option("--timeout", cli->timeout_s, "Seconds before the MPI ping-pong is stopped")
      ->capture_default_str();
  add_launch_options(*command, cli->launcher);
  command->callback([&context, cli] { bench_transports(context, *cli); });
}

}  // namespace dsgd::app
