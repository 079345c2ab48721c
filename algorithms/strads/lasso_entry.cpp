#include "algorithms/strads/lasso_entry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

namespace dsgd::algorithms::strads {

namespace {

// The first point of `entry`'s curve at or below `objective`: its time and round, or -1 if none.
std::pair<double, double> first_at_or_below(const reports::Entry& entry, double objective) {
  const auto& by_time = entry.curves.at(0).points;
  const auto& by_round = entry.curves.at(1).points;
  for (std::size_t k = 0; k < by_time.size(); ++k) {
    if (by_time[k].second <= objective) return {by_time[k].first, by_round[k].first};
  }
  return {-1, -1};
}

}  // namespace

reports::Entry to_entry(const LassoRunOptions& options, const LassoProblem& problem, const LassoRunResult& result,
                        const std::string& executor, int workers) {
  const std::string scheduler(to_string(options.scheduler.kind));
  auto entry = reports::timed_entry("lasso/" + scheduler + "/" + problem.name + "/" + std::to_string(workers), executor,
                                    "measured", scheduler, workers, result.run.seconds);
  entry.dataset = problem.name;
  entry.iterations = result.run.rounds;
  const double objective = result.run.curve.empty() ? 0 : result.run.curve.back().objective;
  std::size_t nonzeros = 0;
  for (const double b : result.beta) nonzeros += b != 0 ? 1 : 0;
  std::vector<std::uint64_t> counts = result.updates;
  std::sort(counts.begin(), counts.end());
  entry.counters = {
      {"objective", objective},
      {"lambda", options.lambda},
      {"lambda_max", lambda_max(problem)},
      {"rows", static_cast<double>(problem.rows)},
      {"features", static_cast<double>(problem.features)},
      {"coordinates_per_round", static_cast<double>(options.scheduler.coordinates)},
      {"updates", static_cast<double>(result.run.updates)},
      {"nonzeros", static_cast<double>(nonzeros)},
      {"rounds_per_s", result.run.seconds > 0 ? static_cast<double>(result.run.rounds) / result.run.seconds : 0}};
  if (!counts.empty()) {
    // How unevenly the scheduler spread its updates (STRADS's prioritised scheduling spends them where beta moves).
    entry.counters["updates_per_coordinate_min"] = static_cast<double>(counts.front());
    entry.counters["updates_per_coordinate_median"] = static_cast<double>(counts[counts.size() / 2]);
    entry.counters["updates_per_coordinate_max"] = static_cast<double>(counts.back());
  }
  entry.labels = {{"stop_reason", result.run.stop_reason}, {"scheduler", scheduler}, {"problem", problem.name}};
  reports::Curve by_time{"objective", "time_s", "objective", {}};
  reports::Curve by_round{"objective_by_round", "round", "objective", {}};
  for (const auto& point : result.run.curve) {
    by_time.points.emplace_back(point.seconds, point.objective);
    by_round.points.emplace_back(static_cast<double>(point.rounds), point.objective);
  }
  entry.curves = {by_time, by_round};
  return entry;
}

void compare_runs(std::vector<reports::Entry>& runs, double gap) {
  double best = runs.front().counters.at("objective");
  for (const auto& entry : runs) best = std::min(best, entry.counters.at("objective"));
  const double target = best * (1 + gap);
  for (auto& entry : runs) {
    const auto [seconds, rounds] = first_at_or_below(entry, target);
    entry.counters["best_objective_of_runs"] = best;
    entry.counters["gap"] = gap;
    // Suboptimality against time, for a log axis (points at the best itself have no logarithm and are left out).
    reports::Curve relative{"relative_gap", "time_s", "(F - best) / best", {}};
    reports::Curve relative_by_round{"relative_gap_by_round", "round", "(F - best) / best", {}};
    const auto& by_time = entry.curves.at(0).points;
    const auto& by_round = entry.curves.at(1).points;
    for (std::size_t k = 0; k < by_time.size(); ++k) {
      const double objective = by_time[k].second;
      if (!(objective > best) || !std::isfinite(objective)) continue;
      relative.points.emplace_back(by_time[k].first, objective / best - 1);
      relative_by_round.points.emplace_back(by_round[k].first, objective / best - 1);
    }
    entry.curves.push_back(relative);
    entry.curves.push_back(relative_by_round);
    if (seconds >= 0) {
      entry.counters["time_to_gap_s"] = seconds;
      entry.counters["rounds_to_gap"] = rounds;
    }
  }
  // The speed-up the STRADS paper reports, to a given objective: the one a baseline ended with. Its own time to it
  // over each run's (runs that never reach it get none).
  for (const char* baseline : {"serial", "shotgun"}) {
    const auto found =
        std::find_if(runs.begin(), runs.end(), [&](const auto& entry) { return entry.algorithm == baseline; });
    if (found == runs.end()) continue;
    const double objective = found->counters.at("objective");
    const double baseline_s = first_at_or_below(*found, objective).first;
    if (!std::isfinite(objective) || baseline_s <= 0) continue;
    for (auto& entry : runs) {
      const double seconds = first_at_or_below(entry, objective).first;
      if (seconds > 0) entry.counters[std::string("speedup_over_") + baseline] = baseline_s / seconds;
    }
  }
}

}  // namespace dsgd::algorithms::strads
