#include "simulate/scaling_study.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "algorithms/algorithm.hpp"
#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/stopwatch.hpp"
#include "simulate/weak_scaling.hpp"

namespace dsgd::simulate {

namespace {

using algorithms::ScalingStudy;
using algorithms::ScalingStudyCase;
using algorithms::StudyMeasure;
using Clock = std::chrono::steady_clock;

// The search range of the noise spread: a lognormal sigma of 0.3 already makes the slowest of 64 nodes twice as
// slow as the mean, far beyond any published weak-scaling efficiency of seed 000.
constexpr double kMaxNoiseSpread = 0.3;
constexpr double kNoiseTolerance = 1e-3;
constexpr int kNoiseGridPoints = 7;

// Efficiencies and comm ratios are fractions shown in percent and compared in percentage points.
bool is_percent(StudyMeasure measure) {
  return measure == StudyMeasure::kEfficiency || measure == StudyMeasure::kCommRatio;
}
bool is_rate(StudyMeasure measure) { return measure == StudyMeasure::kImagesPerSecond; }

constexpr EnumNames<4> kMeasureNames = {"efficiency", "speed-up", "comm ratio", "images/s"};  // StudyMeasure's order
constexpr EnumNames<3> kDeterminedNames = {"predicted", "fitted", "by construction"};         // Determined's order

// Null-terminated: the names are literals.
const char* measure_name(StudyMeasure measure) { return name_of(measure, kMeasureNames, "").data(); }

std::string format_value(StudyMeasure measure, double value) {
  if (is_rate(measure)) return format("%.0f", value);
  return is_percent(measure) ? format("%.1f%%", 100 * value) : format("%.2fx", value);
}

// The batch of case `c` at point `index`, and the images all workers take per iteration there.
int batch_at(const ScalingStudyCase& c, std::size_t index) {
  return c.point_batches.empty() ? c.batch : c.point_batches.at(index);
}
double global_batch(const ScalingStudy& study, const ScalingStudyCase& c, std::size_t index) {
  const double batch = batch_at(c, index);
  return study.split_global_batch ? batch : batch * study.points.at(index).workers;
}

void set_noise(platforms::Platform& platform, double spread, const std::string& source) {
  platform.noise.distribution =
      spread > 0 ? platforms::NoiseDistribution::kLognormal : platforms::NoiseDistribution::kNone;
  platform.noise.spread = spread;
  platform.noise.description = source;
  platform.noise.sources = {{"sigma", source}};
}

class StudyRunner {
 public:
  StudyRunner(const ScalingStudy& study, const ScalingStudyOptions& options) : study_(study), options_(options) {}

  ScalingPoint simulate(const platforms::Platform& platform, const ScalingStudyCase& c, std::size_t index) const {
    return simulate_weak_scaling(platform, options_at(c, index)).front();
  }

  // Every point of one case, side by side (simulate_weak_scaling's sweeps).
  std::vector<ScalingPoint> sweep(const platforms::Platform& platform, const ScalingStudyCase& c) const {
    std::vector<ScalingOptions> sweeps;
    for (std::size_t i = 0; i < study_.points.size(); ++i) sweeps.push_back(options_at(c, i));
    std::vector<ScalingPoint> points;
    for (auto& one : simulate_weak_scaling(platform, sweeps)) points.push_back(std::move(one.front()));
    return points;
  }

  // Point `index` of case `c`: one world size.
  ScalingOptions options_at(const ScalingStudyCase& c, std::size_t index) const {
    const algorithms::ScalingStudyPoint& point = study_.points.at(index);
    const int batch = batch_at(c, index);
    ScalingOptions scaling;
    scaling.algorithm = c.algorithm;
    scaling.model = c.model;
    scaling.hyper.batch = batch;
    if (study_.split_global_batch) {
      if (batch % point.workers != 0) {
        throw InputError(study_.name + ": the global batch " + std::to_string(batch) + " of " + c.label +
                         " does not split among " + std::to_string(point.workers) + " workers");
      }
      scaling.hyper.batch = batch / point.workers;
    }
    scaling.workers = {point.workers};
    scaling.iterations = options_.iterations;
    scaling.ranks_per_node = point.ranks_per_node;
    scaling.noise_seed = options_.noise_seed;
    return scaling;
  }

  // The study's measure at every point of one case's sweep.
  std::vector<double> measure(const ScalingStudyCase& c, const std::vector<ScalingPoint>& points,
                              std::vector<Breakdown>* shares = nullptr) const {
    const bool has_master = algorithms::find_algorithm(c.algorithm).info.has_master;
    std::vector<double> values;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const ScalingPoint& point = points[i];
      if (is_rate(study_.measure)) {
        values.push_back(global_batch(study_, c, i) / point.seconds_per_iteration);
      } else if (study_.measure == StudyMeasure::kCommRatio) {
        const Table3Shares table3 = table3_shares(point.per_rank, has_master);
        values.push_back(table3.comm_ratio);
        if (shares) shares->push_back(table3.shares);
      } else {
        values.push_back(points.front().seconds_per_iteration / point.seconds_per_iteration);
      }
    }
    return values;
  }

  // The published values of one case, point by point (nullopt where the paper gives none).
  std::vector<std::optional<double>> published(const ScalingStudyCase& c) const {
    std::vector<std::optional<double>> values(study_.points.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i < c.published_values.size()) {
        values[i] = c.published_values[i];
      } else if (study_.measure != StudyMeasure::kCommRatio && !is_rate(study_.measure) &&
                 i < c.published_seconds.size()) {
        values[i] = c.published_seconds.front() / c.published_seconds[i];
      }
    }
    return values;
  }

  // The published time per iteration of the case's first point: its published seconds over the paper's
  // iterations, or its global batch over its published images per second.
  double published_first_time(const ScalingStudyCase& c) const {
    if (is_rate(study_.measure) && !c.published_values.empty()) {
      return global_batch(study_, c, 0) / c.published_values.front();
    }
    if (is_rate(study_.measure) || c.paper_iterations <= 0 || c.published_seconds.empty()) {
      throw InputError(study_.name + ": " + c.label + " has no published time at " + study_.points.front().size +
                       " to fit on");
    }
    return c.published_seconds.front() / static_cast<double>(c.paper_iterations);
  }

  // What the compute fit of case `c` is fitted on, in words.
  std::string fit_target(const ScalingStudyCase& c) const {
    if (is_rate(study_.measure)) {
      return c.label + "'s " + format("%.4g", c.published_values.front()) + " images/s at " +
             study_.points.front().size + " (batch " + std::to_string(batch_at(c, 0)) + ")";
    }
    return c.label + "'s " + format("%.4g", c.published_seconds.front()) + " s for " +
           std::to_string(c.paper_iterations) + " iterations at " + study_.points.front().size;
  }

  // The conv efficiency at which the case's first point takes its published time per iteration.
  double fit_conv_efficiency(const platforms::Platform& platform, const ScalingStudyCase& c) const {
    const double target_s = published_first_time(c);
    return solve_kernel_efficiency(
        platform, "conv", target_s,
        [&](const platforms::Platform& probe) { return simulate(probe, c, 0).seconds_per_iteration; },
        study_.name + ": " + c.label + "'s published");
  }

  // Squared differences in percentage points between the case's simulated and published values.
  double squared_error(const platforms::Platform& platform, const ScalingStudyCase& c) const {
    const auto values = measure(c, sweep(platform, c));
    const auto target = published(c);
    double sum = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (target[i]) sum += std::pow(100 * (values[i] - *target[i]), 2);
    }
    return sum;
  }

  void progress(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }

 private:
  const ScalingStudy& study_;
  const ScalingStudyOptions& options_;
};

std::vector<std::string> labels(const std::vector<ScalingStudyCase>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases) out.push_back(c.label);
  return out;
}

}  // namespace

double minimise_1d(const std::function<double(double)>& loss, double lo, double hi, double tolerance, int grid_points) {
  DSGD_ENFORCE(hi > lo && grid_points >= 3 && tolerance > 0, "minimise_1d: a bad range or grid");
  double best_x = lo;
  double best = std::numeric_limits<double>::infinity();
  auto evaluate = [&](double x) {
    const double value = loss(x);
    if (value < best) {
      best = value;
      best_x = x;
    }
    return value;
  };
  const double step = (hi - lo) / (grid_points - 1);
  for (int i = 0; i < grid_points; ++i) evaluate(lo + step * i);
  // Golden section between the grid minimum's neighbours.
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double a = std::max(lo, best_x - step);
  double b = std::min(hi, best_x + step);
  double c = b - ratio * (b - a);
  double d = a + ratio * (b - a);
  double fc = evaluate(c);
  double fd = evaluate(d);
  while (b - a > tolerance) {
    if (fc <= fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - ratio * (b - a);
      fc = evaluate(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + ratio * (b - a);
      fd = evaluate(d);
    }
  }
  return best_x;
}

namespace {

// The kernel model of the processor the workers compute on, where it describes one: training steps are then priced
// by shape, and "conv" (the class of a training step) stands for the model's one efficiency.
const platforms::KernelModel* worker_kernels(const platforms::Platform& platform, const std::string& kernel_class) {
  if (kernel_class != "conv") return nullptr;
  const auto& devices = platform.nodes.devices;
  const auto& kernels = devices.empty() ? platform.nodes.cpu.kernels : devices.front().kernels;
  return kernels ? &*kernels : nullptr;
}

}  // namespace

bool prices_by_shape(const platforms::Platform& platform) { return worker_kernels(platform, "conv") != nullptr; }

platforms::Platform without_kernel_models(platforms::Platform platform) {
  platform.nodes.cpu.kernels.reset();
  for (auto& group : platform.nodes.devices) group.kernels.reset();
  return platform;
}

double kernel_efficiency(const platforms::Platform& platform, const std::string& kernel_class) {
  if (const auto* model = worker_kernels(platform, kernel_class)) {
    return model->efficiency;
  }
  const auto& devices = platform.nodes.devices;
  return devices.empty() ? platform.nodes.cpu.efficiency.of(kernel_class) : devices.front().efficiency.of(kernel_class);
}

void set_kernel_efficiency(platforms::Platform& platform, const std::string& kernel_class, double value,
                           const std::string& source) {
  if (worker_kernels(platform, kernel_class) != nullptr) {
    auto set_model = [&](std::optional<platforms::KernelModel>& model) {
      if (!model) return;
      model->efficiency = value;
      model->sources["efficiency"] = source;
    };
    if (platform.nodes.devices.empty()) set_model(platform.nodes.cpu.kernels);
    for (auto& group : platform.nodes.devices) set_model(group.kernels);
    return;
  }
  auto set = [&](platforms::KernelEfficiency& efficiency) {
    efficiency.by_class[kernel_class] = value;
    efficiency.sources[kernel_class] = source;
  };
  if (platform.nodes.devices.empty()) set(platform.nodes.cpu.efficiency);
  for (auto& group : platform.nodes.devices) set(group.efficiency);
}

double solve_kernel_efficiency(const platforms::Platform& platform, const std::string& kernel_class, double target_s,
                               const std::function<double(const platforms::Platform&)>& seconds_at,
                               const std::string& what, double max_efficiency) {
  const auto refuse = [&](double fastest_s) {
    return InputError(what + " " + format("%.4g", target_s) + " s per iteration is faster than " + platform.name +
                      format(" at %g x peak (", max_efficiency) + format("%.4g", fastest_s) +
                      " s): no kernel efficiency in (0, " + format("%g", max_efficiency) + "] fits it");
  };
  if (worker_kernels(platform, kernel_class) != nullptr) {
    // By shape the time is max(compute, memory) + fixed per kernel: decreasing in e, not linear in 1 / e.
    // Bisection in log e to a relative 1e-6.
    const auto at = [&](double efficiency) {
      platforms::Platform probe = platform;
      set_kernel_efficiency(probe, kernel_class, efficiency, "a probe of the fit");
      return seconds_at(probe);
    };
    const double fastest_s = at(max_efficiency);
    if (fastest_s > target_s) throw refuse(fastest_s);
    double lo = max_efficiency * 1e-4;
    double hi = max_efficiency;
    while (hi / lo > 1 + 1e-6) {
      const double mid = std::sqrt(lo * hi);
      (at(mid) > target_s ? lo : hi) = mid;
    }
    return hi;
  }
  const double e0 = kernel_efficiency(platform, kernel_class);
  platforms::Platform half = platform;
  set_kernel_efficiency(half, kernel_class, e0 / 2, "a probe of the fit");
  const double at_e0 = seconds_at(platform);
  const double conv_s = seconds_at(half) - at_e0;
  const double rest_s = at_e0 - conv_s;
  const double efficiency =
      conv_s > 0 && target_s > rest_s ? e0 * conv_s / (target_s - rest_s) : std::numeric_limits<double>::infinity();
  if (efficiency > max_efficiency) throw refuse(conv_s * e0 / max_efficiency + rest_s);
  return efficiency;
}

namespace {

// The value's text with what determined it, unless the simulation alone did.
std::string marked(std::string text, Determined by) {
  if (by == Determined::kFitted) return text + " FITTED";
  if (by == Determined::kByConstruction) return text + " BY CONSTRUCTION";
  return text;
}

}  // namespace

std::string_view to_string(Determined determined) { return name_of(determined, kDeterminedNames); }

std::optional<double> difference(const ScalingStudy& study, const StudyRow& row) {
  if (!row.published) return std::nullopt;
  if (is_rate(study.measure)) return 100 * (row.predicted / *row.published - 1);
  return (row.predicted - *row.published) * (is_percent(study.measure) ? 100 : 1);
}

std::string_view difference_unit(algorithms::StudyMeasure measure) {
  if (is_rate(measure)) return "percent";
  return is_percent(measure) ? "pp" : "speed-up";
}

namespace {

// The platform's devices' kernel-model efficiency where the platform file says it was FITTED (by a device study,
// on a published rate), which a study that fits nothing itself predicts with: printed, like its own fits.
std::optional<FittedValue> platform_fit(const platforms::Platform& platform, const ScalingStudy& study) {
  const auto& devices = platform.nodes.devices;
  if (devices.empty() || !devices.front().kernels) return std::nullopt;
  const platforms::KernelModel& kernels = *devices.front().kernels;
  platforms::EfficiencyBasis basis = platforms::efficiency_basis(kernels);
  if (!basis.fitted) return std::nullopt;
  return FittedValue{"kernel-model efficiency, " + devices.front().model, "kernel_efficiency", labels(study.cases),
                     kernels.efficiency, std::move(basis.text)};
}

}  // namespace

StudyOutcome run_scaling_study(const platforms::Platform& platform, const ScalingStudy& study,
                               const ScalingStudyOptions& options) {
  if (study.points.empty() || study.cases.empty()) throw InputError(study.name + ": a study without points or cases");
  if (options.iterations < 1) throw InputError(study.name + ": at least one iteration per point");
  StudyRunner runner(study, options);
  StudyOutcome outcome;
  outcome.study = study;
  outcome.platform = platform.name;
  outcome.iterations = options.iterations;
  outcome.noise_seed = options.noise_seed;

  // 1. Compute, noise-free: the noise fit needs each case's compute time to weigh its communication against.
  const auto fit_start = Clock::now();
  platforms::Platform quiet = platform;
  set_noise(quiet, 0, "none");
  std::vector<platforms::Platform> case_platforms(study.cases.size(), quiet);
  std::vector<bool> time_fitted(study.cases.size(), false);
  std::vector<FittedValue> compute_fits;
  auto fit_compute = [&](std::size_t fitted_case, const std::vector<std::size_t>& users) {
    const auto& c = study.cases.at(fitted_case);
    runner.progress("fitting the conv efficiency on " + c.label + "'s time at " + study.points.front().size);
    const double efficiency = runner.fit_conv_efficiency(case_platforms[fitted_case], c);
    const std::string on = runner.fit_target(c);
    std::vector<std::string> applied;
    for (const auto user : users) {
      set_kernel_efficiency(case_platforms[user], "conv", efficiency, "fitted on " + on);
      applied.push_back(study.cases[user].label);
    }
    compute_fits.push_back({"conv efficiency, " + c.label, "conv_efficiency", applied, efficiency, on});
    time_fitted[fitted_case] = true;
  };
  auto fit_all_compute = [&] {
    compute_fits.clear();
    if (study.compute_fit == algorithms::ComputeFit::kEachCase) {
      for (std::size_t i = 0; i < study.cases.size(); ++i) fit_compute(i, {i});
    } else if (study.compute_fit == algorithms::ComputeFit::kOneCase) {
      std::vector<std::size_t> all(study.cases.size());
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
      fit_compute(study.compute_fit_case, all);
    }
  };
  fit_all_compute();

  // 2. Noise, fitted on one case and applied to all.
  const std::optional<std::size_t> noise_case = options.noise_spread ? std::nullopt : study.noise_fit_case;
  double spread = options.noise_spread.value_or(0);
  std::optional<FittedValue> noise_fit;
  if (noise_case) {
    const auto& c = study.cases.at(*noise_case);
    runner.progress("fitting the noise spread on " + c.label + "'s " + measure_name(study.measure) + " column");
    spread = minimise_1d(
        [&](double sigma) {
          platforms::Platform noisy = case_platforms[*noise_case];
          set_noise(noisy, sigma, "a probe of the fit");
          return runner.squared_error(noisy, c);
        },
        0.0, kMaxNoiseSpread, kNoiseTolerance, kNoiseGridPoints);
    const std::string on = c.label + "'s " + measure_name(study.measure) + " column (least squares in points, seed " +
                           std::to_string(options.noise_seed) + ")";
    noise_fit = FittedValue{"noise spread (lognormal sigma)", "noise_spread", labels(study.cases), spread, on};
  }
  for (auto& case_platform : case_platforms) set_noise(case_platform, spread, noise_case ? "fitted" : "given");
  // 3. Noise slows even the first size a little (a node's ranks draw their own factors once their step counts
  // differ, and the slowest sets the pace), so the compute fit is redone with it; efficiencies, being ratios,
  // hardly move.
  if (spread > 0) fit_all_compute();
  outcome.fitted = compute_fits;
  if (study.compute_fit == algorithms::ComputeFit::kNone) {
    if (auto fitted = platform_fit(platform, study)) outcome.fitted.push_back(std::move(*fitted));
  }
  if (noise_fit) outcome.fitted.push_back(*noise_fit);
  outcome.fit_wall_s = seconds_since(fit_start);

  // 4. The prediction sweep: every case at every point with the fitted values.
  runner.progress("predicting " + std::to_string(study.cases.size() * study.points.size()) + " points");
  const auto sweep_start = Clock::now();
  for (std::size_t k = 0; k < study.cases.size(); ++k) {
    const auto& c = study.cases[k];
    const auto points = runner.sweep(case_platforms[k], c);
    outcome.sweep_simulations += static_cast<int>(points.size());
    std::vector<Breakdown> shares;
    const auto values = runner.measure(c, points, &shares);
    const auto published = runner.published(c);
    for (std::size_t i = 0; i < points.size(); ++i) {
      StudyRow row;
      row.case_label = c.label;
      row.size = study.points[i].size;
      row.algorithm = c.algorithm;
      row.model = c.model;
      row.workers = points[i].workers;
      row.ranks = points[i].ranks;
      row.nodes = points[i].nodes;
      row.fidelity = std::string(to_string(points[i].fidelity));
      row.seconds_per_iteration = points[i].seconds_per_iteration;
      if (c.paper_iterations > 0) {
        row.predicted_seconds = points[i].seconds_per_iteration * static_cast<double>(c.paper_iterations);
      }
      if (i < c.published_seconds.size()) row.published_seconds = c.published_seconds[i];
      row.predicted = values[i];
      row.published = published[i];
      const bool target_time = (time_fitted[k] || study.platform_fit_case == k) && i == 0;
      // A rate or a comm ratio at the compute fit's target is that fit; an efficiency or speed-up there is 1.
      const bool value_of_fit = study.measure == StudyMeasure::kCommRatio || is_rate(study.measure);
      if (!value_of_fit && i == 0) {
        row.value_by = Determined::kByConstruction;
      } else if (noise_case == k || (value_of_fit && target_time)) {
        row.value_by = Determined::kFitted;
      }
      const bool ratio_of_fits = !value_of_fit && time_fitted[k] && noise_case == k;
      if (target_time || ratio_of_fits) row.time_by = Determined::kFitted;
      if (i < shares.size()) row.shares = shares[i];
      outcome.rows.push_back(std::move(row));
    }
  }
  outcome.sweep_wall_s = seconds_since(sweep_start);
  return outcome;
}

std::string format_study(const StudyOutcome& outcome) {
  const ScalingStudy& study = outcome.study;
  const StudyMeasure measure = study.measure;
  std::string text;
  char line[512];
  std::snprintf(line, sizeof line, "%s predicted in simulation on %s: %lld steady-state iterations simulated per point",
                study.source.c_str(), outcome.platform.c_str(), static_cast<long long>(outcome.iterations));
  text += line;
  text += study.cases.front().paper_iterations > 0 ? ", times scaled to the paper's iteration counts\n" : "\n";
  for (const auto& fitted : outcome.fitted) {
    std::snprintf(line, sizeof line, "FITTED %s = %.4g, on %s (used for %s)\n", fitted.name.c_str(), fitted.value,
                  fitted.fitted_on.c_str(), join(fitted.applies_to).c_str());
    text += line;
  }
  if (outcome.fitted.empty()) text += "nothing fitted: every value below is predicted\n";

  const char* diff_unit = is_rate(measure) ? "diff %" : is_percent(measure) ? "diff pp" : "diff";
  std::snprintf(line, sizeof line, "\n%-16s %-10s %-21s %-22s %-10s %8s %12s %-22s %10s %8s\n", "case", "size",
                "algorithm", measure_name(measure), "published", diff_unit, "s/iteration", "time s", "published",
                "diff %");
  text += line;
  const StudyRow* largest = nullptr;
  const StudyRow* largest_time = nullptr;
  double largest_time_diff = 0;
  for (const auto& row : outcome.rows) {
    const auto diff = difference(study, row);
    std::string time = "—";
    std::string time_diff = "—";
    if (row.predicted_seconds) time = marked(format("%.4g", *row.predicted_seconds), row.time_by);
    if (row.predicted_seconds && row.published_seconds) {
      const double percent = 100 * (*row.predicted_seconds / *row.published_seconds - 1);
      time_diff = format("%+.1f", percent);
      if (row.time_by == Determined::kPredicted && (!largest_time || std::abs(percent) > std::abs(largest_time_diff))) {
        largest_time = &row;
        largest_time_diff = percent;
      }
    }
    const std::string value = marked(format_value(measure, row.predicted), row.value_by);
    std::snprintf(line, sizeof line, "%-16s %-10s %-21s %-22s %-10s %8s %12.5g %-22s %10s %8s\n",
                  row.case_label.c_str(), row.size.c_str(), row.algorithm.c_str(), value.c_str(),
                  row.published ? format_value(measure, *row.published).c_str() : "—",
                  diff ? format(is_percent(measure) || is_rate(measure) ? "%+.1f" : "%+.2f", *diff).c_str() : "—",
                  row.seconds_per_iteration, time.c_str(),
                  row.published_seconds ? format("%.4g", *row.published_seconds).c_str() : "—", time_diff.c_str());
    text += line;
    if (diff && row.value_by == Determined::kPredicted &&
        (!largest || std::abs(*diff) > std::abs(*difference(study, *largest)))) {
      largest = &row;
    }
  }
  text += "\n";
  if (largest) {
    std::snprintf(line, sizeof line, "largest %s difference among predicted rows: %s at %s, %+.2f %s\n",
                  measure_name(measure), largest->case_label.c_str(), largest->size.c_str(),
                  *difference(study, *largest),
                  is_rate(measure)      ? "%"
                  : is_percent(measure) ? "pp"
                                        : "(speed-up)");
    text += line;
  }
  if (largest_time) {
    std::snprintf(line, sizeof line, "largest time difference among predicted rows: %s at %s, %+.1f%%\n",
                  largest_time->case_label.c_str(), largest_time->size.c_str(), largest_time_diff);
    text += line;
  }
  std::snprintf(line, sizeof line,
                "prediction sweep: %d simulations in %.2f s of wall time; fits: %.2f s of wall time\n",
                outcome.sweep_simulations, outcome.sweep_wall_s, outcome.fit_wall_s);
  text += line;
  for (const auto& note : study.notes) text += "note: " + note + "\n";
  return text;
}

}  // namespace dsgd::simulate
