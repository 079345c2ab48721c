#include "algorithms/shared_memory/study_entries.hpp"

namespace dsgd::algorithms::shared_memory {

reports::Entry study_entry(const std::string& study, const std::string& kind, const std::string& dataset) {
  reports::Entry entry;
  entry.executor = "threads";
  entry.fidelity = "measured";
  entry.dataset = dataset;
  entry.labels["study"] = study;
  entry.labels["kind"] = kind;
  return entry;
}

reports::Entry method_entry(const std::string& study, const std::string& dataset, const std::string& method,
                            const SweepResult& sweep) {
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
  entry.counters = {{"alpha", best.options.alpha},
                    {"batch", best.options.batch},
                    {"hog_batch", best.options.hog_batch},
                    {"runs_swept", static_cast<double>(sweep.all.size())},
                    {"nnz_per_s_per_thread", best.result.nnz_per_s_per_thread}};
  if (sweep.reached) {
    entry.counters["time_to_target_s"] = best.result.time_to_target_s;
    entry.counters["passes_to_target"] = best.result.passes_to_target;
  }
  if (!curve.empty()) entry.counters["final_closeness_percent"] = curve.back().closeness_percent;
  entry.curves = {{"closeness_by_time", "time_s", "closeness_percent", {}},
                  {"closeness_by_pass", "pass", "closeness_percent", {}}};
  for (const auto& point : curve) {
    entry.curves[0].points.emplace_back(point.seconds, point.closeness_percent);
    entry.curves[1].points.emplace_back(point.pass, point.closeness_percent);
  }
  return entry;
}

std::vector<reports::Entry> to_entries(const DatasetOutcome& outcome) {
  std::vector<reports::Entry> entries;
  for (const auto& [method, sweep] : outcome.methods) {
    entries.push_back(method_entry("comparison", outcome.dataset, method, sweep));
  }
  const Table4Row row = table4_row(outcome);
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
  for (const auto& published : table4_published()) {
    if (published.preset != outcome.dataset) continue;
    summary.labels["paper_best_alternative"] = published.best_alternative;
    summary.counters["paper_speedup"] = published.speedup;
  }
  entries.push_back(std::move(summary));
  return entries;
}

reports::Entry to_entry(const ThreadsOutcome& outcome, const std::string& dataset) {
  reports::Entry entry = method_entry("threads", dataset, outcome.method, outcome.sweep);
  entry.labels["kind"] = "threads";
  for (const auto& published : fig3_published()) {
    if (published.method == outcome.method && published.cores == outcome.threads) {
      entry.counters["paper_seconds"] = published.seconds;
    }
  }
  return entry;
}

reports::Entry to_entry(const StalenessOutcome& outcome, const std::string& dataset) {
  reports::Entry entry = study_entry("staleness", "staleness", dataset);
  entry.name = "shared-memory/staleness/" + outcome.method + "/" + outcome.schedule;
  entry.algorithm = outcome.method;
  entry.ranks = outcome.threads;
  const bool within = outcome.measured.min >= outcome.expected.min && outcome.measured.max <= outcome.expected.max;
  entry.labels["schedule"] = outcome.schedule;
  entry.labels["within_bounds"] = within ? "yes" : "no";
  const auto as_double = [](auto value) { return static_cast<double>(value); };
  entry.counters = {{"batch", outcome.batch},
                    {"writes", as_double(outcome.measured.count)},
                    {"measured_min", as_double(outcome.measured.min)},
                    {"measured_max", as_double(outcome.measured.max)},
                    {"measured_mean", outcome.measured.mean},
                    {"bound_min", as_double(outcome.expected.min)},
                    {"bound_max", as_double(outcome.expected.max)},
                    {"table1_min", as_double(outcome.table1.min)},
                    {"table1_max", as_double(outcome.table1.max)},
                    {"table2_min", as_double(outcome.table2.min)},
                    {"table2_max", as_double(outcome.table2.max)}};
  return entry;
}

}  // namespace dsgd::algorithms::shared_memory
