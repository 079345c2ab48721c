#include "algorithms/study_runner.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::algorithms {

namespace {

// The rate with the best final test accuracy among the sweep's entries of one run (a diverged one never wins); 0
// where every rate diverged.
float best_rate(const std::vector<reports::Entry>& sweep) {
  float best = 0;
  double best_accuracy = -1;
  for (const auto& entry : sweep) {
    const auto accuracy = entry.counters.find("test_accuracy");
    if (entry.labels.at("stop_reason") == "diverged" || accuracy == entry.counters.end()) continue;
    if (accuracy->second > best_accuracy) {
      best_accuracy = accuracy->second;
      best = std::stof(entry.labels.at("lr"));
    }
  }
  return best;
}

}  // namespace

void run_study(const Study& study, StudySettings settings, const StudyPlan& plan, const TrainStudyRun& train,
               const std::function<void(reports::Entry)>& keep, std::ostream& log) {
  if (plan.workers.empty()) throw InputError("study: --workers lists none");
  if (plan.platforms.empty()) throw InputError("study: no platform to run on");
  const auto overridden = [&plan](const RunOptions& options) {
    return plan.overridden ? plan.overridden(options) : options;
  };
  // One training of `options` at one configuration, labelled.
  const auto train_one = [&](const StudyRun& run, const RunOptions& options, const std::string& platform,
                             const std::string& phase) {
    auto entry = train(options, platform, run.label, phase);
    entry.labels["study"] = study.name;
    entry.labels["run"] = run.label;
    for (const auto& [key, value] : run.labels) entry.labels[key] = value;
    entry.labels["workers"] = std::to_string(options.workers);
    entry.labels["lr"] = significant(options.hyper.learning_rate, 6);
    if (!phase.empty()) entry.labels["phase"] = phase;
    return entry;
  };
  // The sweep, at the first configuration: every rate for every run.
  std::map<std::string, float> best;
  std::map<std::string, reports::Entry> best_entry;
  if (!plan.lr_sweep.empty()) {
    settings.workers = plan.workers.front();
    for (const auto& run : study.runs(settings)) {
      std::vector<reports::Entry> sweep;
      for (const float rate : plan.lr_sweep) {
        auto options = overridden(run.options);
        options.hyper.learning_rate = rate;
        sweep.push_back(train_one(run, options, plan.platforms.front(), "sweep"));
      }
      best[run.label] = best_rate(sweep);
      for (auto& entry : sweep) {
        if (best[run.label] > 0 && entry.labels.at("lr") == significant(best[run.label], 6)) {
          best_entry[run.label] = entry;
        }
        keep(std::move(entry));
      }
    }
  }
  for (const auto& platform : plan.platforms) {
    for (const int workers : plan.workers) {
      settings.workers = workers;
      for (const auto& run : study.runs(settings)) {
        auto options = overridden(run.options);
        const bool swept = best.count(run.label) > 0;
        if (swept && best[run.label] == 0) {
          log << "study " << study.name << ": " << run.label << " diverged at every rate of the sweep" << std::endl;
        }
        if (swept && best[run.label] > 0) options.hyper.learning_rate = best[run.label];
        const std::string phase = swept ? "chosen" : "";
        // The first configuration's best rate has run in the sweep already.
        if (swept && platform == plan.platforms.front() && workers == plan.workers.front() &&
            best_entry.count(run.label) > 0) {
          auto entry = best_entry[run.label];
          entry.labels["phase"] = phase;
          keep(std::move(entry));
          continue;
        }
        auto entry = train_one(run, options, platform, phase);
        std::vector<float> lower;
        for (const float rate : plan.lr_sweep) {
          if (rate < options.hyper.learning_rate) lower.push_back(rate);
        }
        std::sort(lower.rbegin(), lower.rend());
        for (const float rate : lower) {
          if (entry.labels.at("stop_reason") != "diverged") break;
          entry.labels["phase"] = "diverged";
          keep(std::move(entry));
          options.hyper.learning_rate = rate;
          entry = train_one(run, options, platform, phase);
        }
        keep(std::move(entry));
      }
    }
  }
}

}  // namespace dsgd::algorithms
