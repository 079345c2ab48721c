#pragma once
// Published scaling results predicted in simulation: runs a study of algorithms/'s scaling_study_catalog() (seed
// 000 Tables 3 and 4, Fig 12) on its platform, fits what the study allows to the published numbers, and sets the
// predictions beside them. Generic: the study names the algorithms, this file names none.
//
// Fits, in this order, each reported as fitted (FittedValue) and never as a prediction:
//   compute  the "conv" kernel efficiency of the workers' processor, so that a case's first size takes the
//            published time per iteration (published seconds / paper iterations). The simulated time is linear in
//            1 / efficiency (T = C / e + R), so two noise-free runs give C and R and the fit is exact.
//   noise    the spread of a lognormal compute noise (platforms::Noise, per node and compute step), by a 1-D search
//            minimising the squared differences in percentage points between the simulated and the published
//            values of one case; the noise seed is fixed, so the search is deterministic.
// Each point simulates a few steady-state iterations; times are scaled to the paper's iteration counts.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/studies.hpp"
#include "core/comm.hpp"
#include "platforms/platform.hpp"

namespace dsgd::simulate {

struct ScalingStudyOptions {
  std::int64_t iterations = 20;  // steady-state iterations simulated per point
  std::uint64_t noise_seed = 1;
  // Where set, the noise spread used instead of fitting one (the study's noise case is then predicted too).
  std::optional<double> noise_spread;
  std::function<void(const std::string&)> progress;  // one line per stage, if set
};

// A knob set from the very numbers the study reproduces.
struct FittedValue {
  std::string name;                     // "conv efficiency, GoogLeNet", "noise spread (lognormal sigma)"
  std::string key;                      // for results counters: "conv_efficiency", "noise_spread"
  std::vector<std::string> applies_to;  // the labels of the cases it is used for
  double value = 0;
  std::string fitted_on;  // what it was fitted on, in words
};

// What determined a value of a study row (docs/design.md "Calibration, prediction, validation"): the simulation
// alone (knobs fitted on other numbers included), a fit to this very published number, or the definition of the
// measure (an efficiency or speed-up of the first size against itself is 1).
enum class Determined { kPredicted, kFitted, kByConstruction };
// "predicted", "fitted", "by construction".
std::string_view to_string(Determined determined);

// One (case, point) of the study.
struct StudyRow {
  std::string case_label;
  std::string size;
  std::string algorithm;
  std::string model;
  int workers = 0;
  int ranks = 0;
  int nodes = 0;
  std::string fidelity;
  double seconds_per_iteration = 0;         // simulated
  std::optional<double> predicted_seconds;  // x the paper's iterations
  std::optional<double> published_seconds;
  double predicted = 0;  // the study's measure, a fraction
  std::optional<double> published;
  // The measure: fitted where the noise was fitted on the case's column, or where it is a comm ratio whose
  // denominator the compute fit pinned (the fit's target time); by construction at the first size of an efficiency or
  // speed-up.
  Determined value_by = Determined::kPredicted;
  // The time: fitted at a compute fit's target, and at every size of a case whose first time and efficiencies (or
  // speed-ups) were both fitted (a time is then the first time over the efficiency).
  Determined time_by = Determined::kPredicted;
  Breakdown shares;  // table3_shares(...).shares of the point (kCommRatio studies)
};

struct StudyOutcome {
  algorithms::ScalingStudy study;
  std::string platform;
  std::int64_t iterations = 0;
  std::uint64_t noise_seed = 0;
  std::vector<FittedValue> fitted;
  std::vector<StudyRow> rows;  // case by case, point by point
  double fit_wall_s = 0;       // wall time of the fits
  double sweep_wall_s = 0;     // wall time of the prediction sweep (every case at every point, fitted values set)
  int sweep_simulations = 0;
};

// Runs `study` on `platform` (the study's platform, loaded by the caller). Throws InputError where a published
// time cannot be reached (faster than the platform at peak), and what the simulation throws.
StudyOutcome run_scaling_study(const platforms::Platform& platform, const algorithms::ScalingStudy& study,
                               const ScalingStudyOptions& options);

// The outcome as a text table: predicted beside published with their difference, every fitted value marked
// FITTED with what it was fitted on and every value fixed by definition BY CONSTRUCTION, the largest differences
// among predicted values only, wall times and the notes.
std::string format_study(const StudyOutcome& outcome);

// The difference predicted - published in the measure's unit for display: percentage points for efficiencies and
// comm ratios, times for speed-ups, percent of the published value for rates. nullopt without a published value.
std::optional<double> difference(const algorithms::ScalingStudy& study, const StudyRow& row);
// That unit: "pp", "speed-up" or "percent".
std::string_view difference_unit(algorithms::StudyMeasure measure);

// The x in [lo, hi] minimising `loss`: a grid of `grid_points` and a golden-section search around the best, down
// to `tolerance`. Deterministic; the loss need not be unimodal over [lo, hi], only near its grid minimum.
double minimise_1d(const std::function<double(double)>& loss, double lo, double hi, double tolerance,
                   int grid_points = 11);

// The efficiency of kernel class `kernel_class` ("conv", "gemm", ...) on the processor the workers compute on (the
// devices where the nodes have some), and setting it, with its source, on every processor of that kind. Where that
// processor describes how it runs kernels (platforms::KernelModel), "conv" -- a training step's class -- is the
// model's one efficiency.
double kernel_efficiency(const platforms::Platform& platform, const std::string& kernel_class);
// Whether the processor the workers compute on prices training steps by shape (it has a kernel model), and the
// platform with every kernel model removed (each step at its class's rate).
bool prices_by_shape(const platforms::Platform& platform);
platforms::Platform without_kernel_models(platforms::Platform platform);
void set_kernel_efficiency(platforms::Platform& platform, const std::string& kernel_class, double value,
                           const std::string& source);

// The efficiency of `kernel_class` at which `seconds_at(platform)` -- a simulated time per iteration -- equals
// `target_s`. The time is linear in 1 / e (T = C / e + R), so the runs at the platform's e0 and at e0 / 2 give
// C / e0 = T(e0 / 2) - T(e0) and R = T(e0) - C / e0, and the solution is exact. Throws InputError, starting with
// `what`, where the target needs more than `max_efficiency` x peak. Above 1 the value is an effective rate of the
// step's nominal FLOPs: a convolution algorithm doing fewer multiplications than the direct count (Winograd) runs
// "faster than peak". By shape (a KernelModel's efficiency) the time is not linear in 1 / e (each kernel is
// max(compute, memory) + fixed): the solution is bisected in log e to a relative 1e-6 instead.
double solve_kernel_efficiency(const platforms::Platform& platform, const std::string& kernel_class, double target_s,
                               const std::function<double(const platforms::Platform&)>& seconds_at,
                               const std::string& what, double max_efficiency = 1.0);

}  // namespace dsgd::simulate
