#include "simulate/statistical_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::simulate {

namespace {

// The 1-D searches: a log-spaced grid over this many decades either side of the data's scale finds the basin (the
// profiles need not be unimodal on noisy data), golden-section search refines inside the best grid cell.
constexpr int kGridPoints = 240;
constexpr double kDecadesBelow = 4;
constexpr double kDecadesAbove = 5;
constexpr int kGoldenIterations = 90;  // shrinks a cell by 0.618^90 ~ 1e-19: to rounding

std::string point_name(std::size_t index, const EfficiencyPoint& point) {
  std::string name = "efficiency point " + std::to_string(index);
  if (!point.label.empty()) name += " ('" + point.label + "')";
  return name;
}

void check_point(std::size_t index, const EfficiencyPoint& point) {
  const auto bad = [&](const char* field, const char* expected, double value) {
    throw InputError(point_name(index, point) + ": " + field + " must be " + expected + ", got " +
                     significant(value, 6));
  };
  if (!std::isfinite(point.global_batch) || point.global_batch <= 0) {
    bad("global_batch", "positive and finite", point.global_batch);
  }
  if (!std::isfinite(point.mean_staleness) || point.mean_staleness < 0) {
    bad("mean_staleness", "non-negative and finite", point.mean_staleness);
  }
  if (!std::isfinite(point.updates_to_target) || point.updates_to_target <= 0) {
    bad("updates_to_target", "positive and finite", point.updates_to_target);
  }
}

// Minimises f over the candidates `grid` (ascending) and then by golden-section search inside the neighbouring
// cells of the best one. Returns the argument; an end of the grid is returned exactly when it is best.
double minimise_1d(const std::vector<double>& grid, const std::function<double(double)>& f) {
  std::size_t best = 0;
  double best_value = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const double value = f(grid[i]);
    if (value < best_value) {
      best_value = value;
      best = i;
    }
  }
  double lo = grid[best == 0 ? 0 : best - 1];
  double hi = grid[std::min(best + 1, grid.size() - 1)];
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double x1 = hi - ratio * (hi - lo);
  double x2 = lo + ratio * (hi - lo);
  double f1 = f(x1);
  double f2 = f(x2);
  for (int i = 0; i < kGoldenIterations && hi - lo > 0; ++i) {
    if (f1 <= f2) {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - ratio * (hi - lo);
      f1 = f(x1);
    } else {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + ratio * (hi - lo);
      f2 = f(x2);
    }
  }
  const double refined = f1 <= f2 ? x1 : x2;
  return std::min(f1, f2) < best_value ? refined : grid[best];
}

// 0, then kGridPoints values log-spaced from scale 10^-kDecadesBelow to scale 10^kDecadesAbove.
std::vector<double> zero_and_log_grid(double scale) {
  std::vector<double> grid{0.0};
  for (int i = 0; i < kGridPoints; ++i) {
    const double decade = -kDecadesBelow + (kDecadesBelow + kDecadesAbove) * i / (kGridPoints - 1);
    grid.push_back(scale * std::pow(10.0, decade));
  }
  return grid;
}

// The fit's data in the form the objective uses.
struct LogData {
  std::vector<double> log_updates;
  std::vector<double> batch;
  std::vector<double> staleness;
};

// For given B_noise and kappa, log S_min is the mean of the residuals r_i = log S_i - log(1 + B_noise / B_i)
// - log(1 + kappa s_i) (exact least squares in log S_min); writes it to *log_s_min and returns sum (r_i - mean)^2.
double profile_objective(const LogData& data, double b_noise, double kappa, double* log_s_min = nullptr) {
  const std::size_t n = data.log_updates.size();
  std::vector<double> residual(n);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    residual[i] = data.log_updates[i] - std::log1p(b_noise / data.batch[i]) - std::log1p(kappa * data.staleness[i]);
    sum += residual[i];
  }
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
  for (const double r : residual) squares += (r - mean) * (r - mean);
  if (log_s_min != nullptr) *log_s_min = mean;
  return squares;
}

double geometric_mean(const std::vector<double>& values) {
  double sum = 0;
  for (const double v : values) sum += std::log(v);
  return std::exp(sum / static_cast<double>(values.size()));
}

std::string range_text(double lo, double hi) {
  return lo == hi ? significant(lo, 4) : significant(lo, 4) + ".." + significant(hi, 4);
}

}  // namespace

EfficiencyModel fit_efficiency_model(std::span<const EfficiencyPoint> points, const EfficiencyFitOptions& options) {
  if (points.empty()) throw InputError("efficiency fit: no points given");
  for (std::size_t i = 0; i < points.size(); ++i) check_point(i, points[i]);
  if (options.measured_b_noise_examples &&
      !(std::isfinite(*options.measured_b_noise_examples) && *options.measured_b_noise_examples > 0)) {
    throw InputError("efficiency fit: the measured B_noise must be positive and finite, got " +
                     significant(*options.measured_b_noise_examples, 6));
  }

  EfficiencyModel model;
  model.points = points.size();
  LogData data;
  std::set<double> batches;
  std::set<double> staleness_values;
  for (const auto& point : points) {
    data.log_updates.push_back(std::log(point.updates_to_target));
    data.batch.push_back(point.global_batch);
    data.staleness.push_back(point.mean_staleness);
    batches.insert(point.global_batch);
    staleness_values.insert(point.mean_staleness);
  }
  model.batch_min = *batches.begin();
  model.batch_max = *batches.rbegin();
  model.staleness_min = *staleness_values.begin();
  model.staleness_max = *staleness_values.rbegin();
  model.b_noise_fitted = !options.measured_b_noise_examples.has_value();
  // With no staleness anywhere the data says nothing about kappa: it is fixed at 0, not fitted.
  model.kappa_fitted = model.staleness_max > 0;

  if (model.b_noise_fitted && batches.size() < 2) {
    throw InputError("efficiency fit: B_noise needs points at 2 or more distinct global batches, all " +
                     std::to_string(points.size()) + " have B = " + significant(model.batch_min, 6) +
                     " (or give a measured B_noise)");
  }
  if (model.kappa_fitted && staleness_values.size() < 2) {
    throw InputError("efficiency fit: kappa needs points at 2 or more distinct staleness values, all " +
                     std::to_string(points.size()) + " have staleness " + significant(model.staleness_min, 6) +
                     " (kappa and S_min cannot be told apart)");
  }
  const std::size_t parameters = 1 + (model.b_noise_fitted ? 1 : 0) + (model.kappa_fitted ? 1 : 0);
  if (points.size() < parameters) {
    throw InputError("efficiency fit: " + std::to_string(points.size()) + " points for " + std::to_string(parameters) +
                     " fitted parameters; give at least " + std::to_string(parameters));
  }

  // Nested 1-D searches: kappa outside, B_noise inside, S_min in closed form.
  const std::vector<double> b_grid =
      zero_and_log_grid(geometric_mean(std::vector<double>(batches.begin(), batches.end())));
  const auto best_b_noise = [&](double kappa) {
    if (!model.b_noise_fitted) return *options.measured_b_noise_examples;
    return minimise_1d(b_grid, [&](double b) { return profile_objective(data, b, kappa); });
  };
  double kappa = 0;
  std::vector<double> kappa_grid;
  if (model.kappa_fitted) {
    // Scaled so that kappa s_max spans the grid's decades around 1.
    kappa_grid = zero_and_log_grid(1.0 / model.staleness_max);
    kappa = minimise_1d(kappa_grid, [&](double k) { return profile_objective(data, best_b_noise(k), k); });
  }
  const double b_noise = best_b_noise(kappa);
  double log_s_min = 0;
  const double squares = profile_objective(data, b_noise, kappa, &log_s_min);

  model.s_min_updates = std::exp(log_s_min);
  model.b_noise_examples = b_noise;
  model.kappa_per_staleness = kappa;
  model.b_noise_at_zero = model.b_noise_fitted && b_noise == 0;
  // In the grid's last cell: the data would take any larger value as well.
  model.b_noise_at_bound = model.b_noise_fitted && b_noise >= b_grid[b_grid.size() - 2];
  model.kappa_at_zero = model.kappa_fitted && kappa == 0;
  model.rms_log_residual = std::sqrt(squares / static_cast<double>(points.size()));
  for (const auto& point : points) {
    const double predicted =
        model.s_min_updates * (1 + b_noise / point.global_batch) * (1 + kappa * point.mean_staleness);
    model.relative_errors.push_back(predicted / point.updates_to_target - 1);
  }
  return model;
}

EfficiencyPrediction predict_updates(const EfficiencyModel& model, double global_batch, double mean_staleness) {
  if (!std::isfinite(global_batch) || global_batch <= 0) {
    throw InputError("efficiency prediction: the global batch must be positive and finite, got " +
                     significant(global_batch, 6));
  }
  if (!std::isfinite(mean_staleness) || mean_staleness < 0) {
    throw InputError("efficiency prediction: the mean staleness must be non-negative and finite, got " +
                     significant(mean_staleness, 6));
  }
  EfficiencyPrediction prediction;
  prediction.updates = model.s_min_updates * (1 + model.b_noise_examples / global_batch) *
                       (1 + model.kappa_per_staleness * mean_staleness);
  prediction.examples = prediction.updates * global_batch;
  if (global_batch > model.batch_max) prediction.batch_factor = global_batch / model.batch_max;
  if (global_batch < model.batch_min) prediction.batch_factor = model.batch_min / global_batch;
  if (mean_staleness > model.staleness_max) prediction.staleness_excess = mean_staleness - model.staleness_max;
  if (mean_staleness < model.staleness_min) prediction.staleness_excess = model.staleness_min - mean_staleness;
  prediction.extrapolated = prediction.batch_factor > 1 || prediction.staleness_excess > 0;
  return prediction;
}

double statistical_efficiency(const EfficiencyModel& model, double global_batch, double reference_batch,
                              double mean_staleness) {
  if (!std::isfinite(reference_batch) || reference_batch <= 0) {
    throw InputError("statistical efficiency: the reference batch must be positive and finite, got " +
                     significant(reference_batch, 6));
  }
  // E(B, s) = S_min (B_noise + B) (1 + kappa s): the ratio needs only B_noise and kappa.
  const EfficiencyPrediction at = predict_updates(model, global_batch, mean_staleness);
  const EfficiencyPrediction reference = predict_updates(model, reference_batch, 0);
  return reference.examples / at.examples;
}

std::string describe(const EfficiencyModel& model) {
  const std::string basis = "on " + std::to_string(model.points) + " points, B " +
                            range_text(model.batch_min, model.batch_max) + ", staleness " +
                            range_text(model.staleness_min, model.staleness_max);
  std::string text = "S_min = " + significant(model.s_min_updates, 4) + " updates (FITTED " + basis + ")\n";
  if (!model.b_noise_fitted) {
    text += "B_noise = " + significant(model.b_noise_examples, 4) + " examples (MEASURED, given to the fit)\n";
  } else {
    text += "B_noise = " + significant(model.b_noise_examples, 4) + " examples (FITTED " + basis + ")";
    if (model.b_noise_at_zero) text += " -- clamped at 0: the data show no gain from a larger batch";
    if (model.b_noise_at_bound) text += " -- at the search's upper end: updates ~ 1/B over the whole range";
    text += "\n";
  }
  if (!model.kappa_fitted) {
    text += "kappa = 0 per update of staleness (FIXED: every point has staleness 0)\n";
  } else {
    text += "kappa = " + significant(model.kappa_per_staleness, 4) + " per update of staleness (FITTED " + basis + ")";
    if (model.kappa_at_zero) text += " -- clamped at 0: the data show no cost of staleness";
    text += "\n";
  }
  text += "E_min = S_min x B_noise = " + significant(model.s_min_updates * model.b_noise_examples, 4) +
          " examples (derived)\n";
  double worst = 0;
  for (const double e : model.relative_errors) worst = std::max(worst, std::abs(e));
  text += "fit: rms log residual " + significant(model.rms_log_residual, 3) + ", worst relative error " +
          fixed(100 * worst, 2) + "%; outside B " + range_text(model.batch_min, model.batch_max) + ", staleness " +
          range_text(model.staleness_min, model.staleness_max) + " predictions are extrapolated";
  return text;
}

}  // namespace dsgd::simulate
