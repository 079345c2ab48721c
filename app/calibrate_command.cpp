// `dsgd calibrate`: measures this machine's MPI ping-pong with the dsgd-mpi worker (under mpirun, since dsgd itself
// links SimGrid and never OpenMPI) and the threads executor's ping-pong, fits alpha and beta per message-size
// segment, times the kernel classes with the native kernels (measure/kernel_calibration.hpp), and writes two
// platform files the simulator can load -- one whose link is MPI's, one whose link is the threads executor's --
// with the same CPU, memory and kernel efficiencies (docs/design.md "Calibration, prediction, validation"). The
// sequence is measure/calibrate_run.hpp's; here are the options and dsgd-mpi's runs.

#include "app/cli_units.hpp"
#include "app/commands.hpp"
#include "app/mpi_worker.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "measure/calibrate_run.hpp"
#include "measure/layer_profile.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/suspect.hpp"
#include "platforms/torch_trace.hpp"

namespace dsgd::app {

namespace {

struct CalibrateOptions {
  measure::CalibrationPlan plan;
  std::string weighting = "relative";
  std::string results;  // keep dsgd-mpi's ping-pong results here
  std::string worker;   // dsgd-mpi; default: beside this executable
  int timeout_s = 600;
  measure::mpi::MpiLaunchOptions launcher;  // how the ping-pong ranks start (hosts: the inter-node link)
  // --layers: a kernel profile instead (platforms/kernel_profile.hpp), measured or read from a PyTorch trace.
  std::string layers_out;
  measure::LayerProfileOptions layers;
  std::string torch_trace;
};

// `dsgd calibrate --layers FILE`: this machine's per-layer kernel times, or those of a PyTorch profiler trace
// (--torch-trace: one model, batch and thread count), written to FILE.
void write_layer_profile(Context& context, const CalibrateOptions& options, const std::string& where) {
  const auto& layers = options.layers;
  platforms::KernelProfile profile;
  if (!options.torch_trace.empty()) {
    if (layers.models.size() != 1 || layers.batches.size() != 1 || layers.threads.size() != 1) {
      throw InputError(
          "calibrate --torch-trace: give the traced iteration's one --layer-models, --layer-batches "
          "and --layer-threads");
    }
    auto read = platforms::profile_from_torch_trace(options.torch_trace, build_model(layers.models.front()),
                                                    layers.batches.front(), layers.threads.front());
    for (const auto& kernel : read.unmatched) {
      context.err << "calibrate: " << kernel << " is not in the trace; the kernel model prices it" << std::endl;
    }
    profile = std::move(read.profile);
  } else {
    const auto measured = measure::measure_layer_profile(layers, where, context.err);
    if (const auto busy = measure::busy_machine_warning(measured.others_cores); !busy.empty()) {
      context.err << "calibrate: " << busy << " (the profile says so)" << std::endl;
    }
    profile = measured.profile;
  }
  write_file_atomically(options.layers_out, platforms::to_json(profile).dump(1) + "\n");
  context.out << "calibrate: " << profile.kernels().size() << " kernels of " << profile.device << " -> "
              << options.layers_out << "\n";
}

// The ping-pong's points: each size's median round trip, or (`mean`) its mean.
std::vector<measure::PingPongPoint> pingpong_points(const reports::Results& results, const std::string& source,
                                                    bool mean) {
  const std::string statistic = mean ? "round_trip_mean_s" : "round_trip_s";
  std::vector<measure::PingPongPoint> points;
  for (const auto& entry : results.benchmarks) {
    if (entry.name.rfind("pingpong/", 0) != 0) continue;
    const auto bytes = entry.counters.find("bytes");
    const auto round_trip = entry.counters.find(statistic);
    if (bytes == entry.counters.end() || round_trip == entry.counters.end()) {
      throw InputError(source + ": entry '" + entry.name + "' lacks the bytes or " + statistic + " counter");
    }
    points.push_back({bytes->second, round_trip->second});
  }
  if (points.empty()) throw InputError(source + ": no pingpong/* entries");
  return points;
}

// dsgd-mpi with `arguments` on `ranks` ranks under mpirun, and the results it wrote.
WorkerOutcome run_mpi(Context& context, const CalibrateOptions& options, const std::string& what, int ranks,
                      const std::vector<std::string>& arguments, const std::string& results = "") {
  WorkerLaunch launch;
  launch.command = "calibrate";
  launch.what = what;
  launch.ranks = ranks;
  launch.launcher = options.launcher;
  launch.program = {options.worker.empty() ? measure::mpi::worker_executable().string() : options.worker};
  launch.program.insert(launch.program.end(), arguments.begin(), arguments.end());
  launch.results = results;
  launch.timeout_s = options.timeout_s;
  return run_worker(launch, context);
}

// dsgd-mpi's ping-pong and waiting share, for measure::calibrate.
measure::MpiRuns mpi_runs(Context& context, const CalibrateOptions& options) {
  measure::MpiRuns runs;
  runs.pingpong = [&context, &options](int ranks, bool busy) {
    const auto outcome = run_mpi(context, options, busy ? "the loaded ping-pong" : "the ping-pong", ranks,
                                 measure::mpi_pingpong_arguments(options.plan, busy), busy ? "" : options.results);
    const auto& results = outcome.results;
    measure::MpiPingPong pingpong{pingpong_points(results, outcome.results_path.string(), busy),
                                  results.provenance.host_name, results.provenance.date, ""};
    for (const auto& entry : results.benchmarks) {
      if (const auto transport = entry.labels.find("transport"); transport != entry.labels.end()) {
        pingpong.transport = transport->second;
        break;
      }
    }
    return pingpong;
  };
  runs.waiting = [&context, &options](int ranks, double seconds) {
    const auto outcome = run_mpi(context, options, "the waiting share", ranks, measure::mpi_waiting_arguments(seconds));
    measure::WaitingShare measured;
    for (const auto& entry : outcome.results.benchmarks) {
      if (entry.name != "waiting_share") continue;
      measured.wall_s = entry.real_time;
      measured.cpu_s = entry.cpu_time;
      measured.computing = static_cast<int>(entry.ranks) - 1;
    }
    if (!(measured.wall_s > 0)) {
      throw Error("calibrate: " + outcome.results_path.string() + " has no waiting_share entry");
    }
    return measured;
  };
  return runs;
}

}  // namespace

void register_calibrate_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<CalibrateOptions>();
  auto& plan = options->plan;
  auto* command = app.add_subcommand(
      "calibrate",
      "Measure MPI and threads ping-pong and the kernel classes on this machine, write the platforms validate uses");
  command->add_option("--ranks", plan.ranks, "MPI ranks to start (ping-pong between ranks 0 and 1)")
      ->capture_default_str();
  command->add_option("--out", plan.out, "Platform file to write")->capture_default_str();
  command->add_option("--name", plan.name, "The platform's name")->capture_default_str();
  add_bytes_option(*command, "--min-bytes", plan.min_bytes, "Smallest ping-pong message");
  add_bytes_option(*command, "--max-bytes", plan.max_bytes, "Largest ping-pong message");
  command->add_option("--rounds", plan.rounds, "Timed sweeps over all sizes")->capture_default_str();
  add_bytes_option(*command, "--pool-bytes", plan.pool_bytes,
                   "Ping-pong buffers cycled through, so messages start cold in memory as training's do (default: "
                   "twice the last-level cache; 0: one warm buffer)");
  command->add_option("--boundaries", plan.boundaries, "Segment boundaries in bytes (a fit per segment)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--nodes", plan.nodes, "Hosts in the platform (default: this machine's physical cores)");
  command->add_option("--weighting", options->weighting, "Least squares on 'relative' or 'absolute' error")
      ->capture_default_str();
  command->add_option("--results", options->results, "Also keep the ping-pong results (JSON) here")
      ->check(output_file_check());
  command->add_option("--dsgd-mpi", options->worker, "The dsgd-mpi executable (default: beside dsgd)");
  add_launch_options(*command, options->launcher);
  command->add_option("--timeout", options->timeout_s, "Seconds before the ping-pong run is killed")
      ->capture_default_str();
  command->add_option("--threads-out", plan.threads_out,
                      "Platform file for threads runs (default: --out with -threads before .json)");
  command->add_flag("--kernels-only", plan.kernels_only,
                    "Only time the kernel classes, into the platform files an earlier calibration wrote");
  command->add_option("--kernel-model", plan.kernels.model, "Model whose kernels are timed")->capture_default_str();
  command->add_option("--kernel-batch", plan.kernels.batch, "Images per batch of the timed kernels")
      ->capture_default_str();
  command->add_option("--kernel-repetitions", plan.kernels.repetitions, "Timed repetitions per kernel class")
      ->capture_default_str();
  command
      ->add_option("--kernel-retries", plan.kernel_retries, "Time the kernels again while other programs disturb them")
      ->capture_default_str();
  command->add_option("--kernel-copies", plan.kernels.concurrent,
                      "Copies of the kernel benchmark at once (default: one per physical core)");
  command
      ->add_option("--layers", options->layers_out,
                   "Only time each layer's forward and backward kernels at several batches and thread counts, "
                   "and write that kernel profile here (for `dsgd simulate --kernel-profile`)")
      ->check(output_file_check());
  command->add_option("--layer-models", options->layers.models, "--layers: the models")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--layer-batches", options->layers.batches, "--layers: the batch sizes")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--layer-threads", options->layers.threads, "--layers: the back end's thread counts")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--layer-repetitions", options->layers.repetitions, "--layers: timed runs per kernel")
      ->capture_default_str();
  command->add_option("--torch-trace", options->torch_trace,
                      "--layers: read the kernel times from this PyTorch profiler trace (Chrome-trace JSON of one "
                      "training iteration of --layer-models at --layer-batches on --layer-threads) instead");
  command->callback([&context, options] {
    if (!options->layers_out.empty() || !options->torch_trace.empty()) {
      if (options->layers_out.empty()) throw InputError("calibrate: --torch-trace needs --layers FILE to write");
      const auto provenance = new_results(context).provenance;
      write_layer_profile(context, *options, provenance.host_name + ", " + provenance.date);
      return;
    }
    options->plan.weighting = measure::fit_weighting_from_string(options->weighting);
    check_output_file(options->plan.out);
    check_output_file(options->plan.threads_path());
    const auto provenance = new_results(context).provenance;
    measure::calibrate(options->plan, mpi_runs(context, *options), provenance.host_name + ", " + provenance.date,
                       context.out, context.err);
  });
}

}  // namespace dsgd::app
