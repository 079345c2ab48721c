#pragma once
// The tests of algorithms/ train the catalog's algorithms on a small generated task, on every executor: threads in
// this process, MPI (dsgd-mpi run under real mpirun, as `dsgd run --executor mpi` starts it) and SimGrid with
// payloads (the kernels run inside the simulation) or size-only. This fixture runs one RunCli on each.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/runner.hpp"
#include "algorithms/trainer.hpp"
#include "app/run_common.hpp"
#include "core/subprocess.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/threads/executor.hpp"
#include "reports/results.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/algorithms/small_run.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::algorithms::testing {

// The largest |a_i - b_i| and the largest |b_i|, to compare two runs' weights.
inline std::pair<double, double> largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double difference = 0;
  double largest = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    largest = std::max(largest, std::fabs(static_cast<double>(b[i])));
    difference = std::max(difference, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return {difference, largest};
}

inline std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

class TrainingRuns : public dsgd::testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    dsgd::testing::write_synthetic_idx_folder(dir_, kSmallRunTrainImages, kSmallRunTestImages);
    cli_.dataset = "idx:" + dir_.string();
    cli_.run = small_run_options();
    data_ = app::load_run_data(cli_);
  }

  app::RunCli with(const std::string& algorithm) const {
    app::RunCli cli = cli_;
    cli.run.algorithm = algorithm;
    return cli;
  }

  // Ranks grouped into nodes of `ranks_per_node` where it is > 0 (WorldOptions::ranks_per_node), here and below.
  RunResult run_threads(const app::RunCli& cli, int ranks_per_node = 0) {
    RunResult result;
    WorldOptions world;
    world.size = world_size(cli.run);
    world.ranks_per_node = ranks_per_node;
    measure::threads::run(world, training_worker(cli.run, data_, &result));
    return result;
  }

  // The final weights' hash of `cli`'s run under mpirun (dsgd-mpi run), or "" after a failure it reports.
  std::string run_mpi(const app::RunCli& cli, int ranks_per_node = 0) {
    const auto file = dir_ / (cli.run.algorithm + ".json");
    std::vector<std::string> program = {kWorker, "--ranks-per-node", std::to_string(ranks_per_node), "run"};
    for (const auto& argument : app::run_arguments(cli)) program.push_back(argument);
    program.insert(program.end(), {"--results", file.string()});
    const auto process =
        run_process(measure::mpi::mpirun_command(world_size(cli.run), program), std::chrono::seconds(240));
    EXPECT_EQ(process.exit_code, 0) << cli.run.algorithm << ": " << process.output;
    if (process.exit_code != 0) return "";
    return reports::read_results(file).benchmarks.at(0).labels.at("parameters_fnv1a");
  }

  // `cli`'s run in SimGrid on `platform` (message level), with payloads or size-only; returns what `collect` makes
  // of rank 0's result inside the simulation's process (by default the weights' hash).
  std::string run_simgrid(const app::RunCli& cli, bool payload, const platforms::Platform* platform = nullptr,
                          std::function<std::string(const RunResult&)> collect = {}, int ranks_per_node = 0) {
    WorldOptions world;
    world.size = world_size(cli.run);
    world.ranks_per_node = ranks_per_node;
    world.payload = payload;
    simulate::SimulationOptions options;
    options.fidelity = simulate::Fidelity::kMessage;
    RunResult simulated;
    if (!collect) collect = [](const RunResult& result) { return hex(result.parameters_hash); };
    options.collect = [&simulated, &collect] { return collect(simulated); };
    const auto flat = simulate::flat_platform(world.size, 1e-6, 1e9, 1e12);
    return simulate::simgrid::run(platform ? *platform : flat, world,
                                  training_worker(cli.run, payload ? data_ : RunData{}, &simulated), options)
        .collected;
  }

  // Rank 0's model of record after one round of `iterations` of `algorithm` on `workers` threads; rank 0's bytes
  // sent in bytes_sent_.
  std::vector<float> weights(const std::string& algorithm, int workers, std::int64_t iterations,
                             const Hyperparameters& hyper) {
    const AlgorithmEntry& entry = find_algorithm(algorithm);
    TrainerSetup setup;
    setup.model = std::make_shared<const ModelSpec>(build_model(cli_.run.model));
    setup.train = data_.train;
    std::vector<float> out;
    WorldOptions world;
    world.size = workers;
    measure::threads::run(world, [&](Comm& comm) {
      Trainer trainer(comm, entry.info, hyper, setup);
      const auto instance = entry.make(trainer);
      instance->run_round(trainer, iterations);
      if (comm.rank() == 0) {
        out.resize(trainer.parameter_count());
        instance->model_of_record(trainer, out);
        bytes_sent_ = comm.bytes_sent();
      }
    });
    return out;
  }

  struct Hashes {
    std::string threads, mpi, simgrid;
  };

  // The final weights' hash of `cli`'s run on threads, on MPI and in SimGrid with payloads.
  Hashes run_everywhere(const app::RunCli& cli, int ranks_per_node = 0) {
    Hashes hashes;
    hashes.threads = hex(run_threads(cli, ranks_per_node).parameters_hash);
    hashes.mpi = run_mpi(cli, ranks_per_node);
    hashes.simgrid = run_simgrid(cli, /*payload=*/true, nullptr, {}, ranks_per_node);
    std::printf("%-15s threads %s, mpi %s, simgrid %s\n", cli.run.algorithm.c_str(), hashes.threads.c_str(),
                hashes.mpi.c_str(), hashes.simgrid.c_str());
    return hashes;
  }

  inline static const std::string kWorker = std::string(DSGD_BINARY_DIR) + "/app/dsgd-mpi";
  app::RunCli cli_;
  RunData data_;
  std::uint64_t bytes_sent_ = 0;  // rank 0's, in the last weights() run
};

}  // namespace dsgd::algorithms::testing
