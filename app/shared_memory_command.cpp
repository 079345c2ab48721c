// `dsgd shared-memory`: seed 003's shared-memory SGD studies on this machine (algorithms/shared_memory/studies.hpp):
//   --study comparison  every method to 99.5% closeness per data set, learning rate and batch swept (Table IV, Fig 1)
//   --study threads     time to 99.5% per method across thread counts (Fig 3)
//   --study staleness   measured staleness of every method beside Tables I-II
//   --study mesh        HogBatch on seed 003's simulated 64- and 128-core 2-D mesh (simulate/mesh_sharing.hpp)
// Prints the tables the report shows and writes results entries (reports/results.hpp).
#include <map>

#include "algorithms/shared_memory/studies.hpp"
#include "app/commands.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "measure/calibration.hpp"
#include "simulate/mesh_sharing.hpp"

namespace dsgd::app {

namespace {

namespace sm = algorithms::shared_memory;

struct SharedMemoryOptions {
  std::string study = "comparison";
  sm::StudyOptions common;  // what every study takes: data sets, threads, seed, the sweep's grid, a run's limits
  std::string size = "reduced";
  std::vector<int> thread_counts;  // threads study; empty: 1, 2, 4, ... up to the hardware threads
  int staleness_batch = 1024;
  std::vector<int> cores{1, 2, 4, 8, 16, 32, 64, 128};  // mesh study
  int mesh_batch = 1024;                                // S; HS = S / cores
  double in_order_penalty = 2;                          // assumed (simulate::CoreRate)
  double write_cycles_per_feature = 2;                  // assumed (simulate::SharingPattern)
  std::string results;
};

reports::Entry study_entry(const std::string& study, const std::string& kind, const std::string& dataset) {
  reports::Entry entry;
  entry.executor = "threads";
  entry.fidelity = "measured";
  entry.dataset = dataset;
  entry.labels["study"] = study;
  entry.labels["kind"] = kind;
  return entry;
}

// One method's best run of a sweep: time and passes to the target, the winning options, closeness curves.
reports::Entry method_entry(const std::string& study, const std::string& dataset, const std::string& method,
                            const sm::SweepResult& sweep) {
  reports::Entry entry = study_entry(study, "method", dataset);
  const auto& best = sweep.best;
  entry.name = "shared-memory/" + study + "/" + dataset + "/" + method + "/" + std::to_string(best.result.threads);
  entry.algorithm = method;
  entry.algorithm_options = {{"alpha", best.options.alpha},         {"batch", best.options.batch},
                             {"hog_batch", best.options.hog_batch}, {"threads", best.result.threads},
                             {"seed", best.options.seed},           {"shuffle", best.options.shuffle}};
  entry.ranks = best.result.threads;
  entry.seed = best.options.seed;
  const auto& curve = best.result.curve;
  entry.iterations = static_cast<std::int64_t>(curve.size());
  entry.real_time = curve.empty() ? 0 : curve.back().seconds;
  entry.cpu_time = entry.real_time;
  entry.labels["reached"] = sweep.reached ? "yes" : "no";
  entry.counters["alpha"] = best.options.alpha;
  entry.counters["batch"] = best.options.batch;
  entry.counters["hog_batch"] = best.options.hog_batch;
  entry.counters["runs_swept"] = static_cast<double>(sweep.all.size());
  if (sweep.reached) {
    entry.counters["time_to_target_s"] = best.result.time_to_target_s;
    entry.counters["passes_to_target"] = best.result.passes_to_target;
  }
  if (!curve.empty()) entry.counters["final_closeness_percent"] = curve.back().closeness_percent;
  entry.counters["nnz_per_s_per_thread"] = best.result.nnz_per_s_per_thread;
  entry.curves = {{"closeness_by_time", "time_s", "closeness_percent", {}},
                  {"closeness_by_pass", "pass", "closeness_percent", {}}};
  for (const auto& point : curve) {
    entry.curves[0].points.emplace_back(point.seconds, point.closeness_percent);
    entry.curves[1].points.emplace_back(point.pass, point.closeness_percent);
  }
  return entry;
}

void comparison(const sm::StudyOptions& study, Context& context, reports::Results& results) {
  const auto outcomes = sm::run_comparison(study, &context.err);
  for (const auto& outcome : outcomes) {
    for (const auto& [method, sweep] : outcome.methods) {
      results.benchmarks.push_back(method_entry("comparison", outcome.dataset, method, sweep));
    }
    const sm::Table4Row row = sm::table4_row(outcome);
    reports::Entry summary = study_entry("comparison", "dataset", outcome.dataset);
    summary.name = "shared-memory/comparison/" + outcome.dataset;
    summary.labels["imitates"] = outcome.source.empty() ? "-" : outcome.source;
    summary.labels["winner"] = row.winner.empty() ? "none reached 99.5%" : row.winner;
    summary.labels["best_alternative"] = row.best_alternative.empty() ? "-" : row.best_alternative;
    summary.labels["optimum_solver"] = outcome.optimum.solver;
    summary.counters = {
        {"rows", static_cast<double>(outcome.stats.rows)}, {"features", static_cast<double>(outcome.stats.features)},
        {"nnz", static_cast<double>(outcome.stats.nnz)},   {"sparse_percent", outcome.stats.sparse_percent},
        {"avg_row_nnz", outcome.stats.avg_row_nnz},        {"optimum_objective", outcome.optimum.objective}};
    if (row.hogbatch_s > 0) summary.counters["hogbatch_s"] = row.hogbatch_s;
    if (row.alternative_s > 0) summary.counters["alternative_s"] = row.alternative_s;
    if (row.speedup > 0) summary.counters["speedup"] = row.speedup;
    for (const auto& published : sm::table4_published()) {
      if (published.preset != outcome.dataset) continue;
      summary.labels["paper_best_alternative"] = published.best_alternative;
      summary.counters["paper_speedup"] = published.speedup;
    }
    results.benchmarks.push_back(std::move(summary));
  }
  print_manifest_table(context.out, "sallinen-table4", "speedup", results);
  print_manifest_table(context.out, "sallinen-table4", "methods", results);
}

void threads_study(const SharedMemoryOptions& options, const sm::StudyOptions& study, Context& context,
                   reports::Results& results) {
  const auto counts = options.thread_counts.empty() ? sm::default_thread_counts() : options.thread_counts;
  const auto outcomes = sm::run_threads_study(study, counts, &context.err);
  const std::string dataset = sm::study_dataset(study);
  for (const auto& outcome : outcomes) {
    reports::Entry entry = method_entry("threads", dataset, outcome.method, outcome.sweep);
    entry.labels["kind"] = "threads";
    for (const auto& published : sm::fig3_published()) {
      if (published.method == outcome.method && published.cores == outcome.threads) {
        entry.counters["paper_seconds"] = published.seconds;
      }
    }
    results.benchmarks.push_back(std::move(entry));
  }
  print_manifest_table(context.out, "sallinen-fig3", "threads", results);
}

void staleness_study(const SharedMemoryOptions& options, const sm::StudyOptions& study, Context& context,
                     reports::Results& results) {
  const int threads = study.threads > 0 ? study.threads : 8;
  const auto outcomes = sm::run_staleness_study(study, threads, options.staleness_batch, &context.err);
  const std::string dataset = sm::study_dataset(study);
  for (const auto& outcome : outcomes) {
    reports::Entry entry = study_entry("staleness", "staleness", dataset);
    entry.name = "shared-memory/staleness/" + outcome.method + "/" + outcome.schedule;
    entry.algorithm = outcome.method;
    entry.ranks = outcome.threads;
    entry.labels["schedule"] = outcome.schedule;
    entry.labels["within_bounds"] =
        outcome.measured.min >= outcome.expected.min && outcome.measured.max <= outcome.expected.max ? "yes" : "no";
    entry.counters["batch"] = outcome.batch;
    entry.counters["writes"] = static_cast<double>(outcome.measured.count);
    entry.counters["measured_min"] = static_cast<double>(outcome.measured.min);
    entry.counters["measured_max"] = static_cast<double>(outcome.measured.max);
    entry.counters["measured_mean"] = outcome.measured.mean;
    entry.counters["bound_min"] = static_cast<double>(outcome.expected.min);
    entry.counters["bound_max"] = static_cast<double>(outcome.expected.max);
    entry.counters["table1_min"] = static_cast<double>(outcome.table1.min);
    entry.counters["table1_max"] = static_cast<double>(outcome.table1.max);
    entry.counters["table2_min"] = static_cast<double>(outcome.table2.min);
    entry.counters["table2_max"] = static_cast<double>(outcome.table2.max);
    results.benchmarks.push_back(std::move(entry));
  }
  print_manifest_table(context.out, "sallinen-staleness", "staleness", results);
}

// Seed 003's "future scalability": HogBatch on a 2-D mesh of 64 and 128 simulated cores.
void mesh_study(const SharedMemoryOptions& options, const sm::StudyOptions& study, Context& context,
                reports::Results& results) {
  if (!(options.in_order_penalty > 0)) throw InputError("shared-memory: --in-order-penalty must be > 0");
  if (options.write_cycles_per_feature < 0) throw InputError("shared-memory: --write-cycles-per-feature must be >= 0");
  const auto convergence = sm::run_mesh_convergence(study, options.cores, options.mesh_batch, &context.err);
  const auto& serial = convergence.serial.best.result;
  if (!convergence.serial.reached) throw Error("shared-memory mesh study: serial SGD did not reach 99.5%");
  simulate::CoreRate rate;
  rate.native_nnz_per_s = serial.nnz_per_s_per_thread;
  rate.native_clock_Hz = measure::read_cpu_facts().clock_Hz;
  if (!(rate.native_clock_Hz > 0)) throw UnavailableError("shared-memory mesh study: /proc/cpuinfo gives no clock");
  rate.in_order_penalty = options.in_order_penalty;
  simulate::SharingPattern pattern;
  pattern.rows = static_cast<long long>(convergence.stats.rows);
  pattern.nnz_per_row = convergence.stats.avg_row_nnz;
  pattern.features = static_cast<long long>(convergence.stats.features);
  pattern.write_cycles_per_feature = options.write_cycles_per_feature;
  // Each (P, HS) is predicted on its own (the simulation takes HS from the pattern); per P the faster HS is kept, as
  // seed 003 keeps the best of its sweep.
  std::map<int, std::pair<simulate::MeshSpeedup, const sm::MeshConvergence*>> best;
  double seconds_per_nnz = 0;
  for (const auto& converged : convergence.hogbatch) {
    if (!converged.sweep.reached) {
      context.err << "shared-memory mesh study: HogBatch with " << converged.threads << " lockstep threads and HS "
                  << converged.hog_batch << " did not reach 99.5%; left out" << std::endl;
      continue;
    }
    pattern.batch_rows = converged.hog_batch;
    const simulate::MeshPoint point{simulate::seed003_mesh(converged.threads),
                                    static_cast<double>(converged.sweep.best.result.passes_to_target)};
    const auto predicted = simulate::predict_mesh_speedup({point}, pattern, serial.passes_to_target, rate);
    seconds_per_nnz = predicted.seconds_per_nnz;
    auto found = best.find(converged.threads);
    if (found == best.end() || predicted.points.front().speedup > found->second.first.speedup) {
      best[converged.threads] = {predicted.points.front(), &converged};
    }
  }
  for (const auto& [cores, chosen] : best) {
    const auto& [point, converged] = chosen;
    reports::Entry entry = study_entry("mesh", "mesh", convergence.dataset);
    entry.name = "shared-memory/mesh/" + std::to_string(point.mesh.cores);
    entry.executor = "simgrid";
    entry.fidelity = "flow";
    entry.algorithm = "hogbatch";
    entry.ranks = point.mesh.cores;
    entry.real_time = point.time_to_target_s;
    entry.labels["mesh"] = std::to_string(point.mesh.columns) + " x " + std::to_string(point.mesh.rows) + " stops, " +
                           std::to_string(point.mesh.cores_per_stop) + " cores each";
    entry.labels["assumed"] =
        format("in-order penalty %g, write loop %g cycles per model value, 1-cycle link between a stop's cores",
               options.in_order_penalty, options.write_cycles_per_feature);
    entry.counters["hog_batch"] = converged->hog_batch;
    entry.counters["passes_to_target"] = point.passes_to_target;
    entry.counters["serial_passes_to_target"] = serial.passes_to_target;
    entry.counters["time_per_pass_s"] = point.pass.time_per_pass_s;
    entry.counters["compute_s"] = point.pass.per_pass.compute_s;
    entry.counters["read_s"] = point.pass.per_pass.read_s;
    entry.counters["write_s"] = point.pass.per_pass.write_s;
    entry.counters["hardware_speedup"] = point.hardware_speedup;
    entry.counters["speedup"] = point.speedup;
    entry.counters["seconds_per_nnz"] = seconds_per_nnz;
    entry.counters["native_nnz_per_s"] = rate.native_nnz_per_s;
    entry.counters["simulation_wall_s"] = point.pass.wall_s;
    if (point.mesh.cores == 64) entry.counters["paper_speedup"] = 53;
    if (point.mesh.cores == 128) entry.counters["paper_speedup"] = 90;
    results.benchmarks.push_back(std::move(entry));
  }
  print_manifest_table(context.out, "sallinen-mesh", "speedup", results);
}

void shared_memory(const SharedMemoryOptions& options, Context& context) {
  sm::StudyOptions study = options.common;
  if (study.run.max_passes < 1) throw InputError("shared-memory: --max-passes must be at least 1");
  if (!(study.run.max_seconds > 0)) throw InputError("shared-memory: --max-seconds must be > 0");
  if (study.threads < 0) throw InputError("shared-memory: --threads must be >= 0");
  study.size = data::parse_preset_size(options.size);
  auto results = new_results(context);
  if (options.study == "comparison") {
    comparison(study, context, results);
  } else if (options.study == "threads") {
    threads_study(options, study, context, results);
  } else if (options.study == "staleness") {
    staleness_study(options, study, context, results);
  } else if (options.study == "mesh") {
    mesh_study(options, study, context, results);
  } else {
    throw UnknownNameError("shared-memory study", options.study, {"comparison", "threads", "staleness", "mesh"});
  }
  if (!options.results.empty()) reports::write_results(options.results, results);
}

}  // namespace

void register_shared_memory_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<SharedMemoryOptions>();
  auto* command = app.add_subcommand(
      "shared-memory", "Seed 003's shared-memory SGD on logistic regression: method comparison, threads, staleness");
  command->add_option("--study", options->study, "comparison, threads, staleness or mesh")->capture_default_str();
  command
      ->add_option("--datasets", options->common.datasets,
                   "Sparse presets, libsvm:FILE or fashion-mnist-binary[:CLASS] (default: the study's)")
      ->delimiter(',');
  command->add_option("--size", options->size, "Preset sizes: reduced or full")->capture_default_str();
  command->add_option("--threads", options->common.threads, "OpenMP threads (0: every hardware thread; staleness: 8)");
  command->add_option("--thread-counts", options->thread_counts, "Thread counts of the threads study")->delimiter(',');
  command
      ->add_option(
          "--alphas", options->common.grid.alphas,
          "Learning rates alpha to sweep, in units of 1 / the rows' mean squared norm (step alpha / sqrt(pass))")
      ->delimiter(',');
  command->add_option("--batches", options->common.grid.batches, "Mini-Batch sizes S to sweep (HogBatch: S/T .. S)")
      ->delimiter(',');
  command->add_option("--max-passes", options->common.run.max_passes, "Passes before a run gives up")
      ->capture_default_str();
  command->add_option("--max-seconds", options->common.run.max_seconds, "Training seconds before a run gives up")
      ->capture_default_str();
  command->add_option("--staleness-batch", options->staleness_batch, "S of the staleness study (HS = S / threads)")
      ->capture_default_str();
  command->add_option("--cores", options->cores, "Simulated cores of the mesh study")->delimiter(',');
  command->add_option("--mesh-batch", options->mesh_batch, "S of the mesh study (HogBatch HS = S / cores)")
      ->capture_default_str();
  command
      ->add_option("--in-order-penalty", options->in_order_penalty,
                   "Mesh study, assumed: a 2-wide in-order core's cycles per non-zero over this machine's")
      ->capture_default_str();
  command
      ->add_option("--write-cycles-per-feature", options->write_cycles_per_feature,
                   "Mesh study, assumed: cycles of HogBatch's dense write loop per model value")
      ->capture_default_str();
  command->add_option("--seed", options->common.seed, "Data generation and shuffling")->capture_default_str();
  command->add_option("--results", options->results, "Write the results (JSON) here")->check(output_file_check());
  command->callback([&context, options] { shared_memory(*options, context); });
}

}  // namespace dsgd::app
