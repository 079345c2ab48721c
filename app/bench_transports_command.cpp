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
#include "measure/transports.hpp"
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

// Seed 001 Tables I (latency, us) and II (bandwidth, MB/s), by transport, at the sizes both give (0 B has no
// bandwidth and is left out).
struct PublishedTransport {
  const char* name;
  std::vector<std::pair<double, double>> latency_us;  // (bytes, us)
  std::vector<std::pair<double, double>> bandwidth_MBps;
};

const std::vector<PublishedTransport>& seed001_tables() {
  static const std::vector<PublishedTransport> tables = {
      {"seed 001: shared memory, host",
       {{1, 1.11}, {128, 1.28}, {512, 1.54}, {16384, 6.95}, {524288, 138.61}, {2097152, 501.10}, {4194304, 971.19}},
       {{1, 1.76},
        {128, 213.95},
        {512, 679.82},
        {16384, 5269.01},
        {524288, 4540.58},
        {2097152, 4901.57},
        {4194304, 5064.01}}},
      {"seed 001: shared memory, GPU",
       {{1, 31.70}, {128, 26.25}, {512, 26.20}, {16384, 30.97}, {524288, 163.39}, {2097152, 515.71}, {4194304, 936.43}},
       {{1, 0.06},
        {128, 9.41},
        {512, 37.60},
        {16384, 107.76},
        {524288, 4081.20},
        {2097152, 5148.11},
        {4194304, 5266.48}}},
      {"seed 001: intra-node IB-EDR GDR",
       {{1, 6.13}, {128, 5.83}, {512, 12.00}, {16384, 16.95}, {524288, 218.72}, {2097152, 458.22}, {4194304, 765.36}},
       {{1, 0.58},
        {128, 69.99},
        {512, 226.62},
        {16384, 3558.15},
        {524288, 5298.05},
        {2097152, 7543.43},
        {4194304, 7758.30}}},
      {"seed 001: inter-node IB-EDR GDR",
       {{1, 5.98}, {128, 5.77}, {512, 11.58}, {16384, 16.74}, {524288, 157.12}, {2097152, 425.37}, {4194304, 741.60}},
       {{1, 0.68},
        {128, 87.41},
        {512, 268.72},
        {16384, 3922.10},
        {524288, 6110.80},
        {2097152, 8105.62},
        {4194304, 8657.90}}},
      {"seed 001: CUDA P2P",
       {{1, 19.41}, {128, 15.51}, {512, 15.33}, {16384, 17.50}, {524288, 80.91}, {2097152, 279.04}, {4194304, 541.65}},
       {{1, 0.13},
        {128, 16.41},
        {512, 67.28},
        {16384, 2336.16},
        {524288, 8984.97},
        {2097152, 9604.57},
        {4194304, 9720.82}}},
  };
  return tables;
}

bool seed_size(double bytes) {
  static const std::set<double> sizes = {1, 128, 512, 16384, 524288, 2097152, 4194304};
  return sizes.contains(bytes);
}

// One row: `transport` moved `bytes` one way in `one_way_s` (latency from the ping-pong's or copy's own time,
// bandwidth bytes over it), as seed 001's tables put them.
reports::Entry transport_entry(const std::string& transport, const std::string& executor, const std::string& fidelity,
                               double bytes, double one_way_s, const std::string& description) {
  reports::Entry entry;
  entry.name = "transport/" + transport + "/" + fixed(bytes, 0);
  entry.executor = executor;
  entry.fidelity = fidelity;
  entry.algorithm = transport;
  entry.real_time = one_way_s;
  entry.cpu_time = one_way_s;
  entry.labels = {
      {"transport", transport}, {"description", description}, {"seed_size", seed_size(bytes) ? "yes" : "no"}};
  entry.counters = {{"bytes", bytes},
                    {"one_way_s", one_way_s},
                    {"latency_us", one_way_s * 1e6},
                    {"bandwidth_MBps", one_way_s > 0 ? bytes / one_way_s / 1e6 : 0}};
  return entry;
}

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
      auto entry = transport_entry(transport.name, "threads", "measured", static_cast<double>(bytes), point.one_way_s,
                                   transport.description);
      entry.iterations = point.samples;
      entry.counters["min_s"] = point.min_s;
      results.benchmarks.push_back(std::move(entry));
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
      results.benchmarks.push_back(transport_entry("threads", "threads", "measured", point.bytes,
                                                   point.round_trip_s / 2,
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
      results.benchmarks.push_back(
          transport_entry("mpi", "mpi", "measured", bytes, measured.counters.at("one_way_s"),
                          "MPI between 2 ranks: " + measured.labels.at("transport") + " (half the median round trip)"));
    }
  }
  for (const auto& platform : platforms) {
    const auto& link = platform.network.link;
    for (const std::size_t bytes : sizes) {
      const auto n = static_cast<double>(bytes);
      results.benchmarks.push_back(transport_entry("predicted: " + platform.name, "analytic", "analytic", n,
                                                   link.message_s(n),
                                                   "alpha-beta of platform " + platform.name + "'s link " + link.name));
    }
  }
  for (const auto& table : seed001_tables()) {
    for (std::size_t i = 0; i < table.latency_us.size(); ++i) {
      const auto [bytes, latency_us] = table.latency_us[i];
      auto entry = transport_entry(table.name, "published", "published", bytes, latency_us * 1e-6,
                                   "seed 001 Tables I (latency) and II (bandwidth)");
      entry.counters["bandwidth_MBps"] = table.bandwidth_MBps[i].second;  // the seed's own, measured apart
      results.benchmarks.push_back(std::move(entry));
    }
  }
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
