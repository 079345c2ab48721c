#pragma once
// Time to accuracy on one chip split into groups, in numeric simulation (docs/time-to-accuracy.md "Groups of a
// chip and the extrapolation check"). Each group is a worker of `run.algorithm` with its own copy of the weights
// and its own batches (seed 000 §6.2, Fig 12's P copies of weights and data), computing at the rate the platform
// gives its share of the chip's cores (PlacementOptions::ranks_per_node = groups). For every number of groups the
// numeric simulation gives iterations and simulated seconds to the target accuracy. The statistical-efficiency
// model (simulate/statistical_efficiency.hpp) is fitted on the iterations of the groups up to `fit_up_to` and,
// composed with the time per iteration of a size-only simulation, predicts the larger ones, which the numeric runs
// there check.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/runner.hpp"
#include "platforms/platform.hpp"
#include "simulate/statistical_efficiency.hpp"

namespace dsgd::simulate {

struct AccuracyStudyOptions {
  // The algorithm, model, batch per group, hyper-parameters and budget: a target accuracy and an iteration cap.
  algorithms::RunOptions run;
  std::vector<int> groups = {1, 2, 4, 8, 16, 32, 64};
  int fit_up_to = 16;  // groups whose runs the model is fitted on
  // Published seconds to the target by number of groups (seed 000 Fig 12), shown beside; may be empty.
  std::vector<std::pair<int, double>> published_seconds;
  std::function<void(const std::string&)> progress;
};

struct AccuracyPoint {
  int groups = 0;
  double cores_per_group = 0;
  bool reached = false;
  double iterations_to_target = 0;   // per worker, at the first evaluation at or above the target (numeric)
  double seconds_to_target = 0;      // simulated, numeric
  double seconds_per_iteration = 0;  // simulated, of the numeric run
  double final_accuracy = 0;
  double wall_s = 0;
  std::vector<algorithms::RunPoint> curve;
  bool in_fit = false;  // the model was fitted on this point
  // From the model: iterations, and seconds = iterations x a size-only simulation's seconds per iteration.
  std::optional<EfficiencyPrediction> predicted;
  double predicted_seconds = 0;
  double size_only_seconds_per_iteration = 0;
  std::optional<double> published_seconds;
};

struct AccuracyStudy {
  std::vector<AccuracyPoint> points;
  std::optional<EfficiencyModel> model;  // absent when fewer than two fitted points reached the target
  std::string platform;
};

// Throws InputError for bad options (no groups, a group count the chip cannot hold, no target, no cap) and what the
// simulations throw.
AccuracyStudy run_accuracy_study(const platforms::Platform& platform, const AccuracyStudyOptions& options,
                                 const algorithms::RunData& data);

}  // namespace dsgd::simulate
