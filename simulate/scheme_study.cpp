#include "simulate/scheme_study.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "platforms/catalog.hpp"
#include "simulate/weak_scaling.hpp"

namespace dsgd::simulate {

namespace {

using Clock = std::chrono::steady_clock;

// A published throughput may process a model's nominal FLOPs faster than the GPU's peak: cuDNN's Winograd
// convolutions F(2x2, 3x3) do 2.25 times fewer multiplications than the direct count, so that is the bound.
constexpr double kMaxEffectiveEfficiency = 2.25;

// Per iteration and mean worker: seconds in `wanted` categories.
// The workers are the last point.workers ranks (after a master or a sharded server's servers).
double mean_seconds(const ScalingPoint& point, std::int64_t iterations, bool (*wanted)(Category category)) {
  double sum = 0;
  int workers = 0;
  const std::size_t first = point.per_rank.size() - static_cast<std::size_t>(point.workers);
  for (std::size_t rank = first; rank < point.per_rank.size(); ++rank) {
    for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
      if (wanted(static_cast<Category>(i))) sum += point.per_rank[rank].seconds[i];
    }
    ++workers;
  }
  return workers > 0 ? sum / workers / static_cast<double>(iterations) : 0;
}

bool is_forward_backward(Category category) { return category == Category::kForwardBackward; }
// Exposed communication: what a worker spends exchanging parameters or waiting for its peers (batch copies are not
// the scheme's).
bool is_exchange(Category category) {
  return category == Category::kGpuGpuPara || category == Category::kCpuGpuPara || category == Category::kNetwork ||
         category == Category::kWait;
}

class SchemeRunner {
 public:
  explicit SchemeRunner(const SchemeStudyOptions& options) : options_(options) {}

  ScalingPoint simulate(const platforms::Platform& platform, const algorithms::SchemeModel& model,
                        const algorithms::Scheme& scheme, int workers) const {
    ScalingOptions scaling = scheme_scaling_options(platform, model, scheme, workers);
    scaling.iterations = options_.iterations;
    scaling.fold_fatpipe_flows = options_.fold_fatpipe_flows;
    return simulate_weak_scaling(platform, scaling).front();
  }

  void progress(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }

 private:
  const SchemeStudyOptions& options_;
};

// Where a point takes more than twice its bound, what the simulation spends the rest on, as far as the closed forms
// tell: the scheme's own traffic pattern, compute and communication in sequence, compute slower than one GPU's.
// Empty within twice the bound.
std::string beyond_bound(const SchemeRow& row) {
  const double bound_s = row.bound.seconds();
  if (!(bound_s > 0) || row.seconds_per_iteration <= 2 * bound_s) return "";
  std::string why =
      format("%.1fx its bound: exposed communication %.3f s against %.3f s on the busiest link (%s)",
             row.seconds_per_iteration / bound_s, row.communication_s, row.bound.link_s, row.bound.busiest.c_str());
  if (row.bound.pattern_s > 0)
    why += format("; the scheme itself moves %s: %.3f s", row.bound.pattern.c_str(), row.bound.pattern_s);
  if (row.compute_s + row.communication_s >= 0.9 * row.seconds_per_iteration) {
    why += format("; compute %.3f s and communication in sequence, not overlapped", row.compute_s);
  }
  if (row.compute_s > 1.5 * row.bound.compute_s) {
    why += format("; compute %.3f s against one GPU's %.3f s", row.compute_s, row.bound.compute_s);
  }
  if (row.communication_s > 2 * std::max(row.bound.link_s, row.bound.pattern_s)) {
    why += format("; %.1fx the communication its bandwidth explains: waiting (contention, a server serving in turn)",
                  row.communication_s / std::max(row.bound.link_s, row.bound.pattern_s));
  }
  return why;
}

}  // namespace

ScalingOptions scheme_scaling_options(const platforms::Platform& platform, const algorithms::SchemeModel& model,
                                      const algorithms::Scheme& scheme, int workers) {
  ScalingOptions scaling;
  scaling.algorithm = scheme.algorithm;
  scaling.model = model.model;
  scaling.hyper.batch = model.batch;
  const int per_node = std::max(1, platform.nodes.devices_per_node());
  if (scheme.configure) scheme.configure(scaling.hyper, (workers + per_node - 1) / per_node);
  scaling.workers = {workers};
  return scaling;
}

SchemeOutcome run_scheme_study(const algorithms::SchemeStudy& study, const SchemeStudyOptions& options) {
  if (options.iterations < 1) throw InputError(study.name + ": at least one iteration per point");
  const std::vector<int> workers = options.workers.empty() ? study.workers : options.workers;
  if (workers.empty() || workers.front() != 1) {
    throw InputError(study.name + ": the GPU counts must start at 1, the baseline of the efficiency");
  }
  if (study.schemes.empty()) throw InputError(study.name + ": a study without schemes");
  const auto start = Clock::now();
  SchemeRunner runner(options);
  SchemeOutcome outcome;
  outcome.study = study.name;
  outcome.iterations = options.iterations;
  outcome.notes = study.notes;
  outcome.published = study.published;

  // Compute: each model's conv efficiency, solved at one GPU of the calibration platform -- at one rate per step,
  // and where its device has a kernel model also as that model's efficiency: each cluster takes the one its own
  // devices price by (a cluster without a kernel model keeps the class rate).
  const auto calibration_platform = platforms::load_platform(study.calibration_platform);
  std::map<std::string, SchemeCalibration> calibration_of;
  for (const auto& model : study.models) {
    runner.progress("calibrating " + model.model + " on one GPU of " + calibration_platform.name);
    const double target_s = model.batch / model.images_per_second;
    const auto& baseline = study.schemes.front();
    const auto solve = [&](const platforms::Platform& platform) {
      return solve_kernel_efficiency(
          platform, "conv", target_s,
          [&](const platforms::Platform& probe) {
            return runner.simulate(probe, model, baseline, 1).seconds_per_iteration;
          },
          study.name + ": " + model.model + "'s published", kMaxEffectiveEfficiency);
    };
    SchemeCalibration calibration{model.model, model.device, model.images_per_second, model.source,
                                  solve(without_kernel_models(calibration_platform))};
    if (prices_by_shape(calibration_platform)) calibration.kernel_model_efficiency = solve(calibration_platform);
    calibration_of[model.model] = calibration;
    outcome.calibrations.push_back(calibration);
  }

  for (const auto& platform_name : study.platforms) {
    const auto base = platforms::load_platform(platform_name);
    const bool by_shape = prices_by_shape(base);
    if (by_shape && !prices_by_shape(calibration_platform)) {
      throw InputError(study.name + ": " + base.name + " prices kernels by shape but the calibration platform " +
                       calibration_platform.name + " does not: its efficiency would not carry over");
    }
    for (const auto& model : study.models) {
      platforms::Platform platform = base;
      const SchemeCalibration& calibration = calibration_of.at(model.model);
      set_kernel_efficiency(platform, "conv",
                            by_shape ? calibration.kernel_model_efficiency : calibration.conv_efficiency,
                            format("derived: %.4g img/s of %s on a %s at batch %d (%s)", model.images_per_second,
                                   model.model.c_str(), model.device.c_str(), model.batch, model.source.c_str()));
      runner.progress(platform.name + ", " + model.model + ": " + std::to_string(study.schemes.size()) +
                      " schemes at " + std::to_string(workers.size()) + " sizes");
      double baseline_s = 0;
      double baseline_compute_s = 0;
      const ModelSpec spec = build_model(model.model);
      for (const auto& scheme : study.schemes) {
        const auto scheme_start = Clock::now();
        for (const int count : workers) {
          const auto point = runner.simulate(platform, model, scheme, count);
          if (count == 1 && baseline_s == 0) {
            baseline_s = point.seconds_per_iteration;
            baseline_compute_s = mean_seconds(point, options.iterations, is_forward_backward);
          }
          SchemeRow row;
          row.platform = platform.name;
          row.model = model.model;
          row.scheme = scheme.label;
          row.algorithm = scheme.algorithm;
          row.workers = point.workers;
          row.ranks = point.ranks;
          row.nodes = point.nodes;
          row.fidelity = std::string(to_string(point.fidelity));
          row.seconds_per_iteration = point.seconds_per_iteration;
          row.efficiency = baseline_s / point.seconds_per_iteration;
          row.compute_s = mean_seconds(point, options.iterations, is_forward_backward);
          row.communication_s = mean_seconds(point, options.iterations, is_exchange);
          row.overlapped_s = point.overlapped_comm_s_per_iteration;
          row.wall_s = point.wall_s;
          if (count == 1 && &scheme == &study.schemes.front()) row.efficiency_by = Determined::kByConstruction;
          row.bound = scheme_bound(platform, spec, scheme.algorithm,
                                   scheme_scaling_options(platform, model, scheme, count).hyper, row.workers, row.nodes,
                                   baseline_compute_s);
          row.beyond_bound = beyond_bound(row);
          outcome.rows.push_back(std::move(row));
        }
        runner.progress(format("  %s: %.1f s", scheme.label.c_str(),
                               std::chrono::duration<double>(Clock::now() - scheme_start).count()));
      }
    }
  }
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return outcome;
}

std::string format_scheme_study(const SchemeOutcome& outcome) {
  std::ostringstream out;
  out << "Communication schemes, weak scaling (" << outcome.study << "; " << outcome.iterations
      << " simulated iterations per point)\n\n";
  out << "Compute calibrated on one GPU from a published throughput (not from any scaling result):\n";
  for (const auto& c : outcome.calibrations) {
    out << format(
        "  %-9s %6.1f img/s on a %s -> conv efficiency %.3f of peak%s%s; source: %s\n", c.model.c_str(),
        c.images_per_second, c.device.c_str(), c.conv_efficiency,
        c.conv_efficiency > 1 ? " (an effective rate of the direct FLOP count: fewer multiplications, as "
                                "Winograd convolutions do)"
                              : "",
        c.kernel_model_efficiency > 0
            ? format(", kernel-model efficiency %.3f for devices priced by shape", c.kernel_model_efficiency).c_str()
            : "",
        c.source.c_str());
  }
  // One block per (platform, model), rows in the outcome's order.
  std::size_t i = 0;
  while (i < outcome.rows.size()) {
    const auto& first = outcome.rows[i];
    out << "\n"
        << first.platform << ", " << first.model
        << ": efficiency (exposed communication per iteration) [simulated time over its lower bound]\n";
    std::vector<int> sizes;
    for (std::size_t j = i; j < outcome.rows.size() && outcome.rows[j].platform == first.platform &&
                            outcome.rows[j].model == first.model && outcome.rows[j].scheme == first.scheme;
         ++j) {
      sizes.push_back(outcome.rows[j].workers);
    }
    out << format("  %-22s", "scheme \\ GPUs");
    for (const int size : sizes) out << format(" %23d", size);
    out << "\n";
    while (i < outcome.rows.size() && outcome.rows[i].platform == first.platform &&
           outcome.rows[i].model == first.model) {
      const std::string scheme = outcome.rows[i].scheme;
      out << format("  %-22s", scheme.c_str());
      for (; i < outcome.rows.size() && outcome.rows[i].scheme == scheme && outcome.rows[i].model == first.model &&
             outcome.rows[i].platform == first.platform;
           ++i) {
        const auto& row = outcome.rows[i];
        out << format(" %6.1f%% (%6.3f s) [%4.1fx]", 100 * row.efficiency, row.communication_s,
                      row.seconds_per_iteration / row.bound.seconds());
      }
      out << "\n";
    }
  }
  out << "\nThe first scheme's 1-GPU efficiency is 100% by construction; every other value is predicted.\n";
  out << "Lower bound: max(one GPU's compute, the busiest link's bytes over its bandwidth); more than twice it:\n";
  int beyond = 0;
  for (const auto& row : outcome.rows) {
    if (row.beyond_bound.empty()) continue;
    ++beyond;
    out << format("  %s, %s, %s, %d GPUs: %s\n", row.platform.c_str(), row.model.c_str(), row.scheme.c_str(),
                  row.workers, row.beyond_bound.c_str());
  }
  if (beyond == 0) out << "  none\n";
  for (const auto& published : outcome.published) {
    out << format("Published: %s, %.0fx on %d GPUs (%.0f%%); source: %s\n", published.scheme.c_str(), published.speedup,
                  published.workers, 100 * published.speedup / published.workers, published.source.c_str());
  }
  for (const auto& note : outcome.notes) out << "Note: " << note << "\n";
  out << format("Wall time: %.1f s\n", outcome.wall_s) << std::flush;
  return out.str();
}

}  // namespace dsgd::simulate
