#pragma once
// How a study of the catalog (studies.hpp) runs: every one of its runs at every configuration (platform x workers),
// and, where asked, a learning-rate sweep first: every rate for every run at the first configuration, each run then
// trained everywhere at its best rate (highest final test accuracy, not diverged). A rate that works at the first
// configuration may diverge at another (more workers, staler gradients): the sweep's next lower rates are tried
// there in turn, the diverged runs kept. The training itself is the caller's (any executor), so is where the entries
// go; this file decides what runs and labels each entry (study, run, workers, lr, phase).

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "algorithms/studies.hpp"
#include "reports/results.hpp"

namespace dsgd::algorithms {

struct StudyPlan {
  std::vector<std::string> platforms{""};  // one configuration per platform ("": the executor's own machine)
  std::vector<int> workers{4};             // and per world size
  std::vector<float> lr_sweep;             // rates tried per run at the first configuration; empty: no sweep
  // The caller's overrides of a run's options (e.g. every run's batch); none: the study's options.
  std::function<RunOptions(RunOptions)> overridden;
};

// Trains `options` on `platform` and returns the run's entry. `label` and `phase` ("sweep", "chosen" or "") say
// which run of the study this is, for progress lines.
using TrainStudyRun = std::function<reports::Entry(const RunOptions& options, const std::string& platform,
                                                   const std::string& label, const std::string& phase)>;

// Runs `study` as `plan` says; each finished entry, labelled, goes to `keep` in the order of a results file. Lines on
// what was given up go to `log`. Throws InputError for a plan without workers or platforms.
void run_study(const Study& study, StudySettings settings, const StudyPlan& plan, const TrainStudyRun& train,
               const std::function<void(reports::Entry)>& keep, std::ostream& log);

}  // namespace dsgd::algorithms
