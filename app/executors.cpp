#include "app/executors.hpp"

#include <algorithm>

#include "algorithms/memory_estimate.hpp"
#include "app/mpi_worker.hpp"
#include "core/nn/backend.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "platforms/kernel_profile.hpp"
#include "platforms/loader.hpp"
#include "simulate/numeric.hpp"

namespace dsgd::app {

void check_backend(ExecutorKind executor, const TrainingJob& job) {
  const std::string& backend = job.cli.run.backend;
  if (backend == "cpu") return;
  if (executor == ExecutorKind::kSimgrid) {
    throw InputError(job.command + ": --backend " + backend +
                     " runs natively (threads, mpi); a simulation computes on the cpu back end and prices the "
                     "platform's devices");
  }
  // The ranks run here: threads in this process, MPI ranks beside dsgd.
  if (nn::backend_device_count(backend) == 0) {
    throw UnavailableError(job.command + ": --backend " + backend +
                           " needs a CUDA device, and this machine has none (no GPU, or no NVIDIA driver)");
  }
}

namespace {

// An interrupted run whose caller does not keep it (TrainingJob::keep_interrupted) ends here.
void throw_if_interrupted(const TrainingJob& job, const Context& context, const algorithms::RunResult& result) {
  if (job.keep_interrupted || result.stop_reason != "interrupted" || context.interrupt == nullptr) return;
  throw InterruptedError(context.interrupt->signal(), "stopped " + job.command + "'s run after " +
                                                          std::to_string(result.iterations) + " iterations per worker");
}

// Every rank's replica lives on this machine (threads in this process, MPI ranks beside it): refuse a world or a
// batch that will not fit before starting it. MPI ranks' own copies of the data set are not counted.
void check_native_memory(const TrainingJob& job, const char* executor) {
  const auto& run = job.cli.run;
  const auto test_images = static_cast<std::size_t>(job.cli.test_images > 0 ? job.cli.test_images : 10000);
  algorithms::check_memory(algorithms::estimate_run_memory(run, test_images), job.cli.memory_limit_bytes,
                           job.command + ": " + std::to_string(run.workers) + " workers of " + run.model +
                               " with batch " + std::to_string(run.hyper.batch) + " (" + executor + ")",
                           "fewer workers or a smaller batch");
}

reports::Entry train_on_threads(const TrainingJob& job, Context& context) {
  if (job.data == nullptr) throw InternalError(job.command + ": the threads executor needs the data loaded");
  check_native_memory(job, "threads");
  algorithms::RunResult result;
  WorldOptions world;
  world.size = algorithms::world_size(job.cli.run);
  world.timeout_s = job.timeout_s;
  world.ranks_per_node = job.ranks_per_node;
  std::function<void(const algorithms::RunPoint&)> progress;
  if (job.progress)
    progress = [&](const algorithms::RunPoint& point) { context.err << progress_line(point) << std::flush; };
  // An interrupt stops the run at the next round (the runner polls it); the entry says stop_reason "interrupted".
  algorithms::RunOptions run = job.cli.run;
  run.interrupt = context.interrupt;
  const Interrupt::Watch watch(context.interrupt);
  try {
    measure::threads::run(world, algorithms::training_worker(run, *job.data, &result, progress));
  } catch (const algorithms::DivergedError& error) {
    if (!job.record_divergence) throw;
    context.err << job.command << ": " << error.what() << std::endl;
    result.stop_reason = "diverged";
  } catch (const TimeoutError& error) {
    throw TimeoutError(std::string(error.what()) + " (--timeout)");
  }
  throw_if_interrupted(job, context, result);
  return run_entry(job.cli, result, "threads");
}

reports::Entry train_on_mpi(const TrainingJob& job, Context& context) {
  check_native_memory(job, "mpi");
  WorkerLaunch launch;
  launch.launcher = job.launcher;
  launch.command = job.command;
  launch.what = "dsgd-mpi run";
  launch.ranks = algorithms::world_size(job.cli.run);
  launch.program = {
      measure::mpi::worker_executable().string(), "--timeout", std::to_string(job.timeout_s), "--ranks-per-node",
      std::to_string(job.ranks_per_node),         "run"};
  for (const auto& argument : run_arguments(job.cli)) launch.program.push_back(argument);
  launch.timeout_s = job.wall_timeout_s;
  launch.timeout_option = job.wall_timeout_option;
  launch.echo = job.progress;  // rank 0's progress lines, as they come
  const auto outcome = run_worker(launch, context);
  if (outcome.results.benchmarks.size() != 1) throw InternalError(job.command + ": dsgd-mpi wrote no run result");
  return outcome.results.benchmarks.front();
}

reports::Entry train_in_simulation(const TrainingJob& job, Context& context) {
  if (job.data == nullptr) throw InternalError(job.command + ": a numeric simulation needs the data loaded");
  if (!job.cli.run.checkpoint.path.empty()) {
    throw InputError(job.command + ": --checkpoint is for the threads and mpi executors, not simgrid");
  }
  if (job.platform.empty()) {
    throw InputError(job.command + ": --executor simgrid needs --platform (`dsgd platforms` lists the catalog)");
  }
  const auto& budget = job.cli.run.budget;
  if (budget.iterations <= 0 && budget.seconds <= 0) {
    // Wall time grows with every simulated iteration: a target that is never reached must not run for hours.
    throw InputError(job.command +
                     ": --executor simgrid needs --iterations or --seconds (simulated) as a cap besides "
                     "--target-accuracy");
  }
  auto platform = platforms::load_platform(job.platform);
  if (!job.kernel_profile.empty()) {
    platforms::attach_kernel_profile(
        platform, std::make_shared<const platforms::KernelProfile>(platforms::load_kernel_profile(job.kernel_profile)));
  }
  for (const std::string& warning : platforms::platform_warnings(platform)) {
    context.err << job.command << ": warning: " << warning << '\n';
  }
  simulate::NumericOptions options;
  options.run = job.cli.run;
  options.run.interrupt = context.interrupt;  // the simulation's rank 0 stops at the next round
  options.placement.ranks_per_node = job.ranks_per_node;
  options.kernel_threads = job.simulation_threads;
  options.noise_seed = job.cli.run.hyper.seed;
  options.timeout_s = job.timeout_s;
  options.wall_timeout_s = job.wall_timeout_s;
  options.memory_limit_bytes = job.cli.memory_limit_bytes;
  if (job.progress) {
    options.progress = [&](const algorithms::RunPoint& point) { context.err << progress_line(point) << std::flush; };
  }
  simulate::NumericRun numeric;
  try {
    numeric = simulate::simulate_numeric(platform, options, *job.data);
  } catch (const TimeoutError& error) {
    throw TimeoutError(std::string(error.what()) + " (" + job.wall_timeout_option + ")");
  } catch (const DivergedError& error) {
    if (!job.record_divergence) throw;
    context.err << job.command << ": " << error.what() << std::endl;
    numeric.result.info = algorithms::find_algorithm(job.cli.run.algorithm).info;
    numeric.result.ranks = algorithms::world_size(job.cli.run);
    numeric.result.stop_reason = "diverged";
  }
  throw_if_interrupted(job, context, numeric.result);
  auto entry = run_entry(job.cli, numeric.result, "simgrid");
  simulate::add_simulation(entry, numeric, platform.name);
  return entry;
}

}  // namespace

const std::vector<Executor>& executor_table() {
  static const std::vector<Executor> table = {
      {"threads", ExecutorKind::kThreads, "one thread per rank in this process", true, train_on_threads},
      {"mpi", ExecutorKind::kMpi, "one OpenMPI process per rank (dsgd-mpi under mpirun)", false, train_on_mpi},
      {"simgrid", ExecutorKind::kSimgrid, "one SimGrid actor per rank on a simulated platform (--platform)", true,
       train_in_simulation},
  };
  return table;
}

const std::vector<std::string>& training_executor_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& executor : executor_table()) {
      if (executor.train) out.emplace_back(executor.name);
    }
    return out;
  }();
  return names;
}

const std::vector<std::string>& native_executor_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& executor : executor_table()) {
      if (executor.train && executor.kind != ExecutorKind::kSimgrid) out.emplace_back(executor.name);
    }
    return out;
  }();
  return names;
}

const Executor& find_executor(std::string_view name, const std::vector<std::string>& accepted) {
  if (std::find(accepted.begin(), accepted.end(), name) != accepted.end()) {
    for (const auto& executor : executor_table()) {
      if (executor.name == name) return executor;
    }
  }
  throw UnknownNameError("executor", name, accepted);
}

}  // namespace dsgd::app
