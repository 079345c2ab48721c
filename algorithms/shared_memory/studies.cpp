#include "algorithms/shared_memory/studies.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <thread>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/linear/optimum.hpp"

namespace dsgd::algorithms::shared_memory {

namespace {

constexpr const char* kHogBatch = "hogbatch";
// Table IV's alternatives: the plain methods other than HogBatch.
const std::vector<std::string>& alternatives() {
  static const std::vector<std::string> names{"serial", "mini-batch", "hogwild"};
  return names;
}

int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

void say(std::ostream* log, const std::string& line) {
  if (log != nullptr) *log << line << std::endl;
}

std::string seconds_text(double seconds) { return fixed(seconds, 3) + " s"; }

// A data set of the options, its stats and its optimum.
DatasetOutcome prepare(const std::string& name, const StudyOptions& options, data::SparseDataset& data) {
  data = data::load_sparse(name, options.size, options.seed);
  DatasetOutcome outcome;
  outcome.dataset = name;
  for (const auto& preset : data::sparse_presets()) {
    if (preset.name == name) outcome.source = preset.source;
  }
  outcome.stats = data::sparse_stats(data);
  outcome.optimum = linear::optimum(linear::problem(data));
  return outcome;
}

// The mean squared norm of the rows: a per-sample step of a / |x|^2 moves the margin y w.x by about a, whatever
// the data's scale (unit-norm text rows, 42 ones of connect4, 784 pixels).
double mean_squared_row_norm(const data::SparseDataset& data) {
  double sum = 0;
  for (const float value : data.value) sum += static_cast<double>(value) * value;
  return data.rows() == 0 ? 1.0 : std::max(sum / static_cast<double>(data.rows()), 1e-12);
}

SweepResult sweep_method(const std::string& method, const linear::Problem& problem, double optimal,
                         const StudyOptions& options, int threads) {
  MethodOptions base;
  base.threads = threads;
  base.seed = options.seed;
  SweepGrid grid = options.grid;
  if (options.alphas_per_row_norm) {
    const double scale = 1.0 / mean_squared_row_norm(*problem.data);
    for (float& alpha : grid.alphas) alpha = static_cast<float>(alpha * scale);
  }
  return sweep(find_method(method), problem, optimal, base, grid, options.run);
}

std::string outcome_text(const std::string& method, const SweepResult& result) {
  const auto& best = result.best;
  std::string text = "  " + method + ": ";
  if (!result.reached) {
    char closeness[64];
    std::snprintf(closeness, sizeof closeness, "did not reach the target (best %.3f%%)",
                  best.result.curve.empty() ? 0.0 : best.result.curve.back().closeness_percent);
    return text + closeness;
  }
  char line[160];
  std::snprintf(line, sizeof line, "%s, %d passes (alpha %g, batch %d, hog batch %d)",
                seconds_text(best.result.time_to_target_s).c_str(), best.result.passes_to_target,
                static_cast<double>(best.options.alpha), best.options.batch, best.options.hog_batch);
  return text + line;
}

SharingScheme scheme_of(const std::string& method) {
  if (method == "serial") return SharingScheme::kSerial;
  if (method == "mini-batch") return SharingScheme::kMiniBatch;
  if (method == kHogBatch || method == "hogbatch-local") return SharingScheme::kHogBatch;
  return SharingScheme::kHogwild;
}

}  // namespace

const std::vector<Table4Published>& table4_published() {
  static const std::vector<Table4Published> rows{
      {"news20-like", "hogwild", 0.86},   {"rcv1-v2-like", "hogwild", 1.87}, {"rcv1-test-like", "hogwild", 2.43},
      {"real-sim-like", "hogwild", 3.85}, {"w8a-like", "hogwild", 8.97},     {"connect4-like", "mini-batch", 5.81},
      {"covtype-like", "serial", 20.16},
  };
  return rows;
}

std::vector<std::string> comparison_datasets() {
  std::vector<std::string> names;
  for (const auto& row : table4_published()) names.push_back(row.preset);
  names.emplace_back("fashion-mnist-binary");
  return names;
}

std::vector<std::string> comparison_methods() {
  std::vector<std::string> names;
  for (const auto& entry : method_catalog()) {
    if (entry.name != "multi-model-hogwild") names.push_back(entry.name);
  }
  return names;
}

Table4Row table4_row(const DatasetOutcome& outcome) {
  Table4Row row;
  double winner_s = -1;
  for (const auto& [method, result] : outcome.methods) {
    if (!result.reached) continue;
    const double seconds = result.best.result.time_to_target_s;
    if (winner_s < 0 || seconds < winner_s) {
      winner_s = seconds;
      row.winner = method;
    }
    if (method == kHogBatch) row.hogbatch_s = seconds;
    if (std::find(alternatives().begin(), alternatives().end(), method) != alternatives().end() &&
        (row.alternative_s < 0 || seconds < row.alternative_s)) {
      row.alternative_s = seconds;
      row.best_alternative = method;
    }
  }
  if (row.hogbatch_s > 0 && row.alternative_s > 0) row.speedup = row.alternative_s / row.hogbatch_s;
  return row;
}

std::vector<DatasetOutcome> run_comparison(const StudyOptions& options, std::ostream* log) {
  const auto names = options.datasets.empty() ? comparison_datasets() : options.datasets;
  const int threads = options.threads > 0 ? options.threads : hardware_threads();
  std::vector<DatasetOutcome> outcomes;
  for (const auto& name : names) {
    data::SparseDataset data;
    DatasetOutcome outcome = prepare(name, options, data);
    const linear::Problem problem = linear::problem(data);
    say(log, name + ": " + std::to_string(outcome.stats.rows) + " rows, " + std::to_string(outcome.stats.features) +
                 " features, " + std::to_string(outcome.stats.nnz) + " non-zeros; optimum F* = " +
                 std::to_string(outcome.optimum.objective) + " (" + outcome.optimum.solver + ")");
    for (const auto& method : comparison_methods()) {
      MethodOutcome run{method, sweep_method(method, problem, outcome.optimum.objective, options, threads)};
      for (auto& point : run.sweep.all) point.result.weights.clear();
      run.sweep.best.result.weights.clear();
      say(log, outcome_text(method, run.sweep));
      outcome.methods.push_back(std::move(run));
    }
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

const std::vector<Fig3Published>& fig3_published() {
  // Seed 003 Fig 3, the 2.6 GHz rows (seconds to 99.5% on RCV1-v1-test).
  static const std::vector<Fig3Published> points{
      {"serial", 1, 2.281},     {"hogwild", 1, 2.595},    {"hogwild", 2, 2.975},     {"hogwild", 4, 1.436},
      {"hogwild", 8, 0.829},    {"hogwild", 14, 0.590},   {"mini-batch", 1, 4.608},  {"mini-batch", 2, 2.403},
      {"mini-batch", 4, 1.399}, {"mini-batch", 8, 0.820}, {"mini-batch", 14, 0.586}, {"hogbatch", 1, 4.45},
      {"hogbatch", 2, 1.721},   {"hogbatch", 4, 0.800},   {"hogbatch", 8, 0.439},    {"hogbatch", 14, 0.281},
  };
  return points;
}

std::string study_dataset(const StudyOptions& options) {
  return options.datasets.empty() ? "rcv1-test-like" : options.datasets.front();
}

std::vector<int> default_thread_counts() {
  std::vector<int> counts;
  const int hardware = hardware_threads();
  for (int count = 1; count < hardware; count *= 2) counts.push_back(count);
  counts.push_back(hardware);
  return counts;
}

std::vector<ThreadsOutcome> run_threads_study(const StudyOptions& options, const std::vector<int>& threads,
                                              std::ostream* log) {
  if (threads.empty()) throw InputError("shared-memory threads study: no thread counts");
  for (const int count : threads) {
    if (count < 1)
      throw InputError("shared-memory threads study: thread counts must be >= 1, got " + std::to_string(count));
  }
  const std::string name = study_dataset(options);
  data::SparseDataset data;
  const DatasetOutcome prepared = prepare(name, options, data);
  const linear::Problem problem = linear::problem(data);
  std::vector<ThreadsOutcome> outcomes;
  for (const auto& method : comparison_methods()) {
    for (const int count : threads) {
      if (method == "serial" && count > 1) continue;
      ThreadsOutcome outcome{method, count, sweep_method(method, problem, prepared.optimum.objective, options, count)};
      for (auto& point : outcome.sweep.all) point.result.weights.clear();
      outcome.sweep.best.result.weights.clear();
      say(log, outcome_text(method + " on " + std::to_string(count) + " threads", outcome.sweep));
      outcomes.push_back(std::move(outcome));
    }
  }
  return outcomes;
}

std::vector<StalenessOutcome> run_staleness_study(const StudyOptions& options, int threads, int batch,
                                                  std::ostream* log) {
  if (threads < 1 || batch < threads) {
    throw InputError("shared-memory staleness study: need threads >= 1 and batch >= threads, got " +
                     std::to_string(threads) + " and " + std::to_string(batch));
  }
  const std::string name = study_dataset(options);
  const data::SparseDataset data = data::load_sparse(name, options.size, options.seed);
  const linear::Problem problem = linear::problem(data);
  RunOptions run;
  run.max_passes = 1;
  run.record_staleness = true;
  run.target_percent = 200;  // one pass, whatever the closeness
  std::vector<StalenessOutcome> outcomes;
  for (const auto& method : comparison_methods()) {
    for (const Schedule schedule : {Schedule::kLockstep, Schedule::kThreads}) {
      MethodOptions options_of_run;
      options_of_run.threads = method == "serial" ? 1 : threads;
      options_of_run.batch = batch;
      options_of_run.hog_batch = std::max(1, batch / threads);
      options_of_run.seed = options.seed;
      options_of_run.alpha = 0.1F;
      options_of_run.schedule = schedule;
      const auto& entry = find_method(method);
      const auto made = entry.make(options_of_run);
      StalenessOutcome outcome;
      outcome.method = method;
      outcome.schedule = schedule == Schedule::kLockstep ? "lockstep" : "threads";
      outcome.threads = made->threads();
      outcome.batch = entry.batch_option == BatchOption::kBatch      ? options_of_run.batch
                      : entry.batch_option == BatchOption::kHogBatch ? options_of_run.hog_batch
                                                                     : 0;
      outcome.expected = made->staleness_bounds();
      const SharingScheme scheme = scheme_of(method);
      const int table_batch = std::max(1, outcome.batch);
      outcome.table1 = table1_staleness(scheme, outcome.threads, table_batch);
      outcome.table2 = table2_staleness(scheme, outcome.threads, table_batch);
      // The objective's optimum does not matter for one pass: any positive yardstick will do.
      const ConvergenceResult result = run_to_closeness(entry, problem, 1.0, options_of_run, run);
      if (result.staleness) outcome.measured = *result.staleness;
      char line[200];
      std::snprintf(
          line, sizeof line, "  %s (%s, %d threads, batch %d): staleness %llu..%llu, mean %.1f; bounds %llu..%llu",
          method.c_str(), outcome.schedule.c_str(), outcome.threads, outcome.batch,
          static_cast<unsigned long long>(outcome.measured.min), static_cast<unsigned long long>(outcome.measured.max),
          outcome.measured.mean, static_cast<unsigned long long>(outcome.expected.min),
          static_cast<unsigned long long>(outcome.expected.max));
      say(log, line);
      outcomes.push_back(std::move(outcome));
    }
  }
  return outcomes;
}

MeshConvergenceStudy run_mesh_convergence(const StudyOptions& options, const std::vector<int>& threads, int batch,
                                          std::ostream* log) {
  if (threads.empty()) throw InputError("shared-memory mesh study: no core counts");
  if (batch < 1) throw InputError("shared-memory mesh study: the batch S must be at least 1");
  for (const int count : threads) {
    if (count < 1) throw InputError("shared-memory mesh study: core counts must be >= 1, got " + std::to_string(count));
  }
  const std::string name = study_dataset(options);
  data::SparseDataset data;
  const DatasetOutcome prepared = prepare(name, options, data);
  const linear::Problem problem = linear::problem(data);
  MeshConvergenceStudy study;
  study.dataset = name;
  study.stats = prepared.stats;
  study.serial = sweep_method("serial", problem, prepared.optimum.objective, options, 1);
  study.serial.best.result.weights.clear();
  say(log, outcome_text("serial", study.serial));
  for (const int count : threads) {
    // HS from S / P (seed 003 Tables I-II's example) up to S ("the optimal HS can lie between S/T to S"): few
    // samples per write keep staleness low, many amortise the dense write of the whole model.
    std::vector<int> hog_batches{std::max(1, batch / count)};
    if (batch / count > 1 && batch > hog_batches.front()) hog_batches.push_back(batch);
    for (const int hog_batch : hog_batches) {
      MeshConvergence point;
      point.threads = count;
      point.hog_batch = hog_batch;
      MethodOptions base;
      base.threads = count;
      base.seed = options.seed;
      base.batch = batch;
      base.hog_batch = hog_batch;
      base.schedule = Schedule::kLockstep;
      SweepGrid grid = options.grid;
      grid.batches = {batch};
      grid.hog_batches = {hog_batch};
      if (options.alphas_per_row_norm) {
        for (float& alpha : grid.alphas) alpha = static_cast<float>(alpha / mean_squared_row_norm(data));
      }
      point.sweep = sweep(find_method(kHogBatch), problem, prepared.optimum.objective, base, grid, options.run);
      for (auto& run : point.sweep.all) run.result.weights.clear();
      point.sweep.best.result.weights.clear();
      say(log, outcome_text("hogbatch, lockstep, " + std::to_string(count) + " threads", point.sweep));
      study.hogbatch.push_back(std::move(point));
    }
  }
  return study;
}

}  // namespace dsgd::algorithms::shared_memory
