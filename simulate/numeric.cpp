#include "simulate/numeric.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <thread>

#include "core/json.hpp"
#include "core/memory.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/evaluation.hpp"
#include "simulate/simgrid/kernel_pool.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

namespace {

// RunResult through the simulation process's pipe (SimulationOptions::collect), as JSON.
Json to_json(const algorithms::RunResult& result) {
  Json curve = Json::array();
  for (const auto& point : result.curve) {
    curve.push_back(
        {point.iterations, point.images, point.seconds, point.test_accuracy, point.test_loss, point.train_loss});
  }
  const auto breakdowns = [](const std::vector<Breakdown>& per_rank) {
    Json out = Json::array();
    for (const auto& breakdown : per_rank) out.push_back(breakdown.seconds);
    return out;
  };
  return {{"curve", curve},
          {"iterations", result.iterations},
          {"train_seconds", result.train_seconds},
          {"images_per_second", result.images_per_second},
          {"time_to_target_s", result.time_to_target_s},
          {"stop_reason", result.stop_reason},
          {"per_rank", breakdowns(result.per_rank)},
          {"first_round_per_rank", breakdowns(result.first_round_per_rank)},
          {"staleness", result.staleness.counts()},
          {"clock_staleness", result.clock_staleness.counts()},
          {"overlapped_comm_s", result.overlapped_comm_s},
          {"counters", result.counters},
          {"parameters_hash", result.parameters_hash}};
}

void from_json(const Json& json, algorithms::RunResult& result) {
  for (const auto& point : json.at("curve")) {
    result.curve.push_back({point.at(0).get<std::int64_t>(), point.at(1).get<double>(), point.at(2).get<double>(),
                            point.at(3).get<double>(), point.at(4).get<double>(), point.at(5).get<double>()});
  }
  result.iterations = json.at("iterations").get<std::int64_t>();
  result.train_seconds = json.at("train_seconds").get<double>();
  result.images_per_second = json.at("images_per_second").get<double>();
  result.time_to_target_s = json.at("time_to_target_s").get<double>();
  result.stop_reason = json.at("stop_reason").get<std::string>();
  const auto breakdowns = [](const Json& list) {
    std::vector<Breakdown> out;
    for (const auto& seconds : list) {
      Breakdown breakdown;
      for (std::size_t i = 0; i < breakdown.seconds.size(); ++i) breakdown.seconds[i] = seconds.at(i).get<double>();
      out.push_back(breakdown);
    }
    return out;
  };
  result.per_rank = breakdowns(json.at("per_rank"));
  result.first_round_per_rank = breakdowns(json.at("first_round_per_rank"));
  const auto histogram = [&json](const char* key, CountHistogram& into) {
    const auto counts = json.at(key).get<std::vector<std::int64_t>>();
    for (std::size_t k = 0; k < counts.size(); ++k) {
      if (counts[k] > 0) into.add(static_cast<std::int64_t>(k), counts[k]);
    }
  };
  histogram("staleness", result.staleness);
  histogram("clock_staleness", result.clock_staleness);
  result.parameters_hash = json.at("parameters_hash").get<std::uint64_t>();
  result.overlapped_comm_s = json.at("overlapped_comm_s").get<double>();
  result.counters = json.at("counters").get<std::map<std::string, double>>();
}

}  // namespace

MemoryEstimate estimate_numeric_memory(const algorithms::RunOptions& run, std::size_t test_images, int kernel_threads) {
  // Rank 0 evaluates on one evaluator per pool thread (algorithms/runner.cpp), on the CPU back end, but builds no
  // more of them than the test set has batches.
  const int evaluators =
      run.backend == "cpu" ? nn::evaluation_parts(test_images, kernel_threads_for(kernel_threads)) : 1;
  return algorithms::estimate_run_memory(run, test_images, evaluators);
}

NumericRun simulate_numeric(const platforms::Platform& platform, const NumericOptions& options,
                            const algorithms::RunData& data) {
  algorithms::RunOptions run = options.run;
  algorithms::check_run_options(run);
  // geeps's buffers are held to the platform's device memory unless the run names a size (as weak_scaling.cpp).
  if (run.hyper.device_memory_bytes == 0) run.hyper.device_memory_bytes = platform.nodes.device_memory_bytes();
  if (!data.train || !data.test) throw InputError("simulate: a numeric simulation needs its data loaded");
  const auto& entry = algorithms::find_algorithm(run.algorithm);

  NumericRun out;
  out.memory = estimate_numeric_memory(run, data.test->size(), options.kernel_threads);
  algorithms::check_memory(out.memory, options.memory_limit_bytes,
                           "simulate: " + std::to_string(run.workers) + " numeric workers of " + run.model,
                           "fewer workers or a smaller batch, or a size-only simulation (`dsgd simulate`)");

  WorldOptions world;
  world.size = algorithms::world_size(run);
  world.timeout_s = options.timeout_s;
  world.payload = true;
  SimulationOptions simulation;
  simulation.fidelity = Fidelity::kMessage;  // the other levels carry no data
  simulation.placement = options.placement;
  // A master serves its workers from the host CPU where the workers are devices (as simulate/weak_scaling.cpp).
  simulation.placement.master_on_host = entry.info.has_master && platform.nodes.devices_per_node() > 0;
  simulation.placement.host_ranks = std::max(1, run.hyper.servers);
  simulation.noise_seed = options.noise_seed;
  simulation.wall_timeout_s = options.wall_timeout_s;
  simulation.interrupt = run.interrupt;
  simulation.kernel_threads = options.kernel_threads;
  check_simulatable(platform, world.size, simulation.placement);

  algorithms::RunResult result;
  simulation.collect = [&result] { return to_json(result).dump(); };
  // The simulation forks from a thread of its own. GNU libgomp keeps a thread's OpenMP pool after its parallel
  // kernels, and a child forked from that thread inherits the pool's bookkeeping but not its threads: its first
  // parallel kernel then waits forever (as after an earlier experiment of `dsgd reproduce`). A new thread has no pool.
  SimulationResult outcome;
  std::exception_ptr failure;
  std::thread forking([&] {
    try {
      outcome =
          simgrid::run(platform, world, algorithms::training_worker(run, data, &result, options.progress), simulation);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  forking.join();
  if (failure) std::rethrow_exception(failure);
  try {
    from_json(Json::parse(outcome.collected), out.result);
  } catch (const Json::exception& error) {
    throw InternalError(std::string("simulate: the numeric simulation returned an unreadable result: ") + error.what());
  }
  out.result.info = entry.info;
  out.result.ranks = world.size;
  const int per_node = ranks_per_node(platform, simulation.placement);
  out.nodes = std::max(
      1, (world.size - (simulation.placement.master_on_host ? simulation.placement.host_ranks : 0) + per_node - 1) /
             per_node);
  out.wall_s = outcome.wall_s;
  out.setup_wall_s = outcome.setup_wall_s;
  out.run_wall_s = outcome.run_wall_s;
  return out;
}

void add_simulation(reports::Entry& entry, const NumericRun& run, const std::string& platform) {
  entry.name += "/" + platform;
  entry.fidelity = "message";
  entry.platform = platform;
  entry.labels["clock"] = "simulated";
  entry.counters["nodes"] = run.nodes;
  entry.counters["wall_s"] = run.wall_s;
  entry.counters["memory_estimate_bytes"] = run.memory.total_bytes;
}

}  // namespace dsgd::simulate
