// `dsgd shared-memory`: seed 003's shared-memory SGD studies on this machine (algorithms/shared_memory/studies.hpp):
//   --study comparison  every method to 99.5% closeness per data set, learning rate and batch swept (Table IV, Fig 1)
//   --study threads     time to 99.5% per method across thread counts (Fig 3)
//   --study staleness   measured staleness of every method beside Tables I-II
//   --study mesh        HogBatch on seed 003's simulated 64- and 128-core 2-D mesh (simulate/mesh_sharing.hpp)
// Prints the tables the report shows and writes results entries (reports/results.hpp).
#include "algorithms/shared_memory/study_entries.hpp"
#include "app/commands.hpp"
#include "core/error.hpp"
#include "measure/calibration.hpp"
#include "simulate/mesh_study.hpp"

namespace dsgd::app {

namespace {

namespace sm = algorithms::shared_memory;

struct SharedMemoryOptions {
  std::string study = "comparison";
  sm::StudyOptions common;  // what every study takes: data sets, threads, seed, the sweep's grid, a run's limits
  std::string size = "reduced";
  std::vector<int> thread_counts;  // threads study; empty: 1, 2, 4, ... up to the hardware threads
  int staleness_batch = 1024;
  simulate::MeshStudyOptions mesh;
  std::string results;
};

void comparison(const sm::StudyOptions& study, Context& context, reports::Results& results) {
  for (const auto& outcome : sm::run_comparison(study, &context.err)) {
    for (auto& entry : sm::to_entries(outcome)) results.benchmarks.push_back(std::move(entry));
  }
  print_manifest_table(context.out, "sallinen-table4", "speedup", results);
  print_manifest_table(context.out, "sallinen-table4", "methods", results);
}

void threads_study(const SharedMemoryOptions& options, const sm::StudyOptions& study, Context& context,
                   reports::Results& results) {
  const auto counts = options.thread_counts.empty() ? sm::default_thread_counts() : options.thread_counts;
  const std::string dataset = sm::study_dataset(study);
  for (const auto& outcome : sm::run_threads_study(study, counts, &context.err)) {
    results.benchmarks.push_back(sm::to_entry(outcome, dataset));
  }
  print_manifest_table(context.out, "sallinen-fig3", "threads", results);
}

void staleness_study(const SharedMemoryOptions& options, const sm::StudyOptions& study, Context& context,
                     reports::Results& results) {
  const int threads = study.threads > 0 ? study.threads : 8;
  const std::string dataset = sm::study_dataset(study);
  for (const auto& outcome : sm::run_staleness_study(study, threads, options.staleness_batch, &context.err)) {
    results.benchmarks.push_back(sm::to_entry(outcome, dataset));
  }
  print_manifest_table(context.out, "sallinen-staleness", "staleness", results);
}

// Seed 003's "future scalability": HogBatch on a 2-D mesh of 64 and 128 simulated cores.
void mesh_study(const SharedMemoryOptions& options, const sm::StudyOptions& study, Context& context,
                reports::Results& results) {
  if (!(options.mesh.in_order_penalty > 0)) throw InputError("shared-memory: --in-order-penalty must be > 0");
  if (options.mesh.write_cycles_per_feature < 0) {
    throw InputError("shared-memory: --write-cycles-per-feature must be >= 0");
  }
  simulate::MeshStudyOptions mesh = options.mesh;
  mesh.native_clock_Hz = measure::read_cpu_facts().clock_Hz;
  if (!(mesh.native_clock_Hz > 0)) throw UnavailableError("shared-memory mesh study: /proc/cpuinfo gives no clock");
  for (auto& entry : simulate::to_entries(simulate::run_mesh_study(study, mesh, &context.err))) {
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
  command->add_option("--cores", options->mesh.cores, "Simulated cores of the mesh study")->delimiter(',');
  command->add_option("--mesh-batch", options->mesh.batch, "S of the mesh study (HogBatch HS = S / cores)")
      ->capture_default_str();
  command
      ->add_option("--in-order-penalty", options->mesh.in_order_penalty,
                   "Mesh study, assumed: a 2-wide in-order core's cycles per non-zero over this machine's")
      ->capture_default_str();
  command
      ->add_option("--write-cycles-per-feature", options->mesh.write_cycles_per_feature,
                   "Mesh study, assumed: cycles of HogBatch's dense write loop per model value")
      ->capture_default_str();
  command->add_option("--seed", options->common.seed, "Data generation and shuffling")->capture_default_str();
  command->add_option("--results", options->results, "Write the results (JSON) here")->check(output_file_check());
  command->callback([&context, options] { shared_memory(*options, context); });
}

}  // namespace dsgd::app
