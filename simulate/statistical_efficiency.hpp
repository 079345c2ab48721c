#pragma once
// Statistical efficiency where numerics cannot reach (issue 24, docs/statistical-efficiency.md): how many updates
// training needs to reach a target accuracy, as a function of the global batch and of the staleness,
//
//   S(B, s) = S_min (1 + B_noise / B) (1 + kappa s)
//
// (McCandlish et al. 2018 for the batch term, a multiplicative staleness factor after Dai et al. 2019), fitted on
// small numeric runs and evaluated at sizes that cannot be computed. Every prediction says whether it leaves the
// batch and staleness ranges the model was fitted on. Plain arithmetic: no SimGrid type appears here.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dsgd::simulate {

// One numeric run: the updates it took to reach the target accuracy.
struct EfficiencyPoint {
  double global_batch = 0;       // examples per update, summed over the replicas that contribute to it
  double mean_staleness = 0;     // updates the gradients applied were behind the weights, on average
  double updates_to_target = 0;  // updates of the model until the target accuracy was first reached
  int workers = 0;               // label: replicas of the run (not used by the fit)
  std::string label;             // label: algorithm or run name (not used by the fit)
};

struct EfficiencyFitOptions {
  // B_noise in examples measured apart (e.g. measure::measure_noise_scale's B_simple) instead of fitted: > 0,
  // finite. With it, one batch size suffices.
  std::optional<double> measured_b_noise_examples;
};

struct EfficiencyModel {
  double s_min_updates = 0;        // updates needed with an infinite batch and no staleness
  double b_noise_examples = 0;     // critical batch: below it more batch cuts updates ~1:1, above it hardly
  double kappa_per_staleness = 0;  // fractional extra updates per update of mean staleness
  bool b_noise_fitted = true;      // false: measured_b_noise_examples was given
  bool b_noise_at_zero = false;    // fitted and clamped at 0 (the data wanted B_noise <= 0: no batch benefit)
  bool b_noise_at_bound = false;   // fitted and at the search's upper end (updates ~ 1/B: perfect scaling)
  bool kappa_fitted = true;        // false: every point has staleness 0, kappa fixed at 0
  bool kappa_at_zero = false;      // fitted and clamped at 0 (the data wanted staleness to help)
  std::size_t points = 0;          // points fitted on
  double batch_min = 0;            // range of validity: global batches of the points
  double batch_max = 0;
  double staleness_min = 0;  // range of validity: mean staleness of the points
  double staleness_max = 0;
  std::vector<double> relative_errors;  // per point, in input order: predicted / observed - 1
  double rms_log_residual = 0;          // sqrt(mean (log predicted - log observed)^2), the fit's objective
};

// Fits the model by least squares on log(updates) (the updates span orders of magnitude; a log residual is a
// relative error). kappa >= 0 and B_noise >= 0 are searched in 1-D each, S_min is exact given them; a parameter
// that lands on 0 is flagged in the model. Throws InputError (one line naming the point) for no points, a
// non-positive or non-finite batch or update count, a negative or non-finite staleness; when B_noise is fitted,
// for fewer than 2 distinct batches; when kappa is fitted (some staleness > 0), for a single staleness value;
// for fewer points than fitted parameters; and for a measured B_noise that is not positive and finite.
EfficiencyModel fit_efficiency_model(std::span<const EfficiencyPoint> points, const EfficiencyFitOptions& options = {});

// A prediction and how far it leaves the range of validity.
struct EfficiencyPrediction {
  double updates = 0;   // S(B, s)
  double examples = 0;  // updates x B: the data the training consumes
  // True when B or s lies outside the fitted ranges: the number is an extrapolation of the model, not of data.
  bool extrapolated = false;
  // Outside the batch range: B / batch_max above it, batch_min / B below it (> 1); inside: 1.
  double batch_factor = 1;
  // Outside the staleness range: updates of staleness beyond its nearest end (> 0); inside: 0.
  double staleness_excess = 0;
};

// S(B, s) with the model's parameters. Throws InputError for a non-positive or non-finite batch or a negative or
// non-finite staleness.
EfficiencyPrediction predict_updates(const EfficiencyModel& model, double global_batch, double mean_staleness = 0);

// Statistical efficiency of batch B at staleness s relative to batch B0 at staleness 0: the examples B0 needs over
// the examples B needs, E(B0, 0) / E(B, s) = (B_noise + B0) / (B_noise + B) / (1 + kappa s) -- Pollux's formula
// (Qiao et al. 2021) times the staleness factor. 1 at B = B0, s = 0; below 1 for larger batches. Throws InputError
// like predict_updates, and for a non-positive reference batch.
double statistical_efficiency(const EfficiencyModel& model, double global_batch, double reference_batch,
                              double mean_staleness = 0);

// The parameters, one line each, marked FITTED, MEASURED or FIXED with the points and ranges behind them, e.g.
//   S_min = 412 updates (FITTED on 5 points, B 64..1024, staleness 0..15)
// then the derived E_min and the fit's residuals.
std::string describe(const EfficiencyModel& model);

}  // namespace dsgd::simulate
