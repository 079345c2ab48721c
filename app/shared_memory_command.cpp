// `dsgd shared-memory`: seed 003's shared-memory SGD studies on this machine (algorithms/shared_memory/studies.hpp):
//   --study comparison  every method to 99.5% closeness per data set, learning rate and batch swept (Table IV, Fig 1)
//   --study threads     time to 99.5% per method across thread counts (Fig 3)
//   --study staleness   measured staleness of every method beside Tables I-II
// Prints the tables the report shows and writes results entries (reports/results.hpp).
#include <cstdio>
#include <thread>

#include "algorithms/shared_memory/studies.hpp"
#include "app/commands.hpp"
#include "core/error.hpp"

namespace dsgd::app {

namespace {

namespace sm = algorithms::shared_memory;

struct SharedMemoryOptions {
  std::string study = "comparison";
  std::vector<std::string> datasets;
  std::string size = "reduced";
  int threads = 0;
  std::vector<int> thread_counts;  // threads study; empty: 1, 2, 4, ... up to the hardware threads
  std::vector<float> alphas;
  std::vector<int> batches;
  int max_passes = 60;
  double max_seconds = 60;
  int staleness_batch = 1024;
  std::uint64_t seed = 1;
  std::string results;
};

const std::vector<std::string>& study_names() {
  static const std::vector<std::string> names{"comparison", "threads", "staleness"};
  return names;
}

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
  reports::Curve by_time{"closeness_by_time", "time_s", "closeness_percent", {}};
  reports::Curve by_pass{"closeness_by_pass", "pass", "closeness_percent", {}};
  for (const auto& point : curve) {
    by_time.points.emplace_back(point.seconds, point.closeness_percent);
    by_pass.points.emplace_back(point.pass, point.closeness_percent);
  }
  entry.curves = {by_time, by_pass};
  return entry;
}

void comparison(const SharedMemoryOptions& options, const sm::StudyOptions& study, Context& context,
                reports::Results& results) {
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
    summary.counters["rows"] = static_cast<double>(outcome.stats.rows);
    summary.counters["features"] = static_cast<double>(outcome.stats.features);
    summary.counters["nnz"] = static_cast<double>(outcome.stats.nnz);
    summary.counters["sparse_percent"] = outcome.stats.sparse_percent;
    summary.counters["avg_row_nnz"] = outcome.stats.avg_row_nnz;
    summary.counters["optimum_objective"] = outcome.optimum.objective;
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
  (void)options;
}

void threads_study(const SharedMemoryOptions& options, const sm::StudyOptions& study, Context& context,
                   reports::Results& results) {
  std::vector<int> counts = options.thread_counts;
  if (counts.empty()) {
    const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    for (int count = 1; count < hardware; count *= 2) counts.push_back(count);
    counts.push_back(hardware);
  }
  const auto outcomes = sm::run_threads_study(study, counts, &context.err);
  const std::string dataset = study.datasets.empty() ? "rcv1-test-like" : study.datasets.front();
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
  const int threads = options.threads > 0 ? options.threads : 8;
  const auto outcomes = sm::run_staleness_study(study, threads, options.staleness_batch, &context.err);
  const std::string dataset = study.datasets.empty() ? "rcv1-test-like" : study.datasets.front();
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

void shared_memory(const SharedMemoryOptions& options, Context& context) {
  if (options.max_passes < 1) throw InputError("shared-memory: --max-passes must be at least 1");
  if (!(options.max_seconds > 0)) throw InputError("shared-memory: --max-seconds must be > 0");
  if (options.threads < 0) throw InputError("shared-memory: --threads must be >= 0");
  sm::StudyOptions study;
  study.datasets = options.datasets;
  study.size = data::parse_preset_size(options.size);
  study.threads = options.threads;
  study.seed = options.seed;
  if (!options.alphas.empty()) study.grid.alphas = options.alphas;
  if (!options.batches.empty()) study.grid.batches = options.batches;
  study.run.max_passes = options.max_passes;
  study.run.max_seconds = options.max_seconds;
  auto results = new_results(context);
  if (options.study == "comparison") {
    comparison(options, study, context, results);
  } else if (options.study == "threads") {
    threads_study(options, study, context, results);
  } else if (options.study == "staleness") {
    staleness_study(options, study, context, results);
  } else {
    throw UnknownNameError("shared-memory study", options.study, study_names());
  }
  if (!options.results.empty()) reports::write_results(options.results, results);
}

}  // namespace

void register_shared_memory_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<SharedMemoryOptions>();
  auto* command = app.add_subcommand(
      "shared-memory", "Seed 003's shared-memory SGD on logistic regression: method comparison, threads, staleness");
  command->add_option("--study", options->study, "comparison, threads or staleness")->capture_default_str();
  command
      ->add_option("--datasets", options->datasets,
                   "Sparse presets, libsvm:FILE or fashion-mnist-binary[:CLASS] (default: the study's)")
      ->delimiter(',');
  command->add_option("--size", options->size, "Preset sizes: reduced or full")->capture_default_str();
  command->add_option("--threads", options->threads, "OpenMP threads (0: every hardware thread; staleness: 8)");
  command->add_option("--thread-counts", options->thread_counts, "Thread counts of the threads study")->delimiter(',');
  command
      ->add_option(
          "--alphas", options->alphas,
          "Learning rates alpha to sweep, in units of 1 / the rows' mean squared norm (step alpha / sqrt(pass))")
      ->delimiter(',');
  command->add_option("--batches", options->batches, "Mini-Batch sizes S to sweep (HogBatch: S/T .. S)")
      ->delimiter(',');
  command->add_option("--max-passes", options->max_passes, "Passes before a run gives up")->capture_default_str();
  command->add_option("--max-seconds", options->max_seconds, "Training seconds before a run gives up")
      ->capture_default_str();
  command->add_option("--staleness-batch", options->staleness_batch, "S of the staleness study (HS = S / threads)")
      ->capture_default_str();
  command->add_option("--seed", options->seed, "Data generation and shuffling")->capture_default_str();
  command->add_option("--results", options->results, "Write the results (JSON) here");
  command->callback([&context, options] { shared_memory(*options, context); });
}

}  // namespace dsgd::app
