#include "simulate/kernel_model_check.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/layer_kernels.hpp"
#include "simulate/kernel_cost.hpp"
#include "simulate/scaling_study.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

namespace {

using platforms::ProfilePhase;

bool in_phase(const LayerKernel& kernel, ProfilePhase phase) {
  switch (phase) {
    case ProfilePhase::kForward:
      return kernel.pass == KernelPass::kForward;
    case ProfilePhase::kBackward:
      return kernel.pass != KernelPass::kForward;
    case ProfilePhase::kBackwardData:
      return kernel.pass == KernelPass::kBackwardData;
    case ProfilePhase::kBackwardWeights:
      return kernel.pass == KernelPass::kBackwardWeights;
  }
  return false;
}

std::size_t layer_index(const ModelSpec& model, const std::string& name) {
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    if (model.layers[i].name == name) return i;
  }
  throw InputError("kernel model check: " + model.name + " has no layer '" + shown_text(name) + "'");
}

std::string describe(const FittedPoint& point) {
  return point.key.model + " " + point.key.layer + " " + std::string(to_string(point.key.phase)) + ", batch " +
         std::to_string(point.batch) + ", " + std::to_string(point.key.threads) + " thread" +
         (point.key.threads == 1 ? "" : "s");
}

}  // namespace

double predicted_layer_seconds(const platforms::Platform& platform, const ModelSpec& model, std::size_t layer,
                               ProfilePhase phase, std::int64_t batch, int threads) {
  const auto& cpu = platform.nodes.cpu;
  if (!cpu.kernels) {
    throw InputError(platform.name + ": its CPU describes no kernel model (`kernels`): nothing to predict by shape");
  }
  if (threads < 1 || threads > cpu.cores()) {
    throw InputError(platform.name + ": " + std::to_string(threads) + " threads on a CPU of " +
                     std::to_string(cpu.cores()) + " cores");
  }
  const double share = static_cast<double>(threads) / cpu.cores();
  const KernelMachine machine = *kernel_machine(cpu.kernels, cpu.peak_flops * share, share, platform.nodes.memories);
  const double resident_bytes = layer_alone_bytes(model.layers.at(layer), batch);
  double seconds = 0;
  for (const LayerKernel& kernel : layer_kernels(model, layer, batch)) {
    if (in_phase(kernel, phase)) seconds += kernel_cost(machine, kernel, resident_bytes).seconds;
  }
  return seconds;
}

std::vector<KernelCheckRow> check_kernel_model(const platforms::Platform& platform,
                                               const platforms::KernelProfile& measured,
                                               const std::optional<FittedPoint>& fitted) {
  std::map<std::string, ModelSpec> models;
  std::vector<KernelCheckRow> rows;
  for (const auto& [key, points] : measured.kernels()) {
    auto found = models.find(key.model);
    if (found == models.end()) found = models.emplace(key.model, build_model(key.model)).first;
    const std::size_t layer = layer_index(found->second, key.layer);
    for (const auto& point : points) {
      KernelCheckRow row{key.model, key.layer, key.phase, point.batch, key.threads, point.seconds};
      row.predicted_s = predicted_layer_seconds(platform, found->second, layer, key.phase, point.batch, key.threads);
      row.fitted = fitted && fitted->key == key && fitted->batch == point.batch;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::string above_peak_flag(double efficiency) {
  return "ABOVE PEAK: " + significant(efficiency, 3) +
         " x the model's peak; the peak (clock, vector width) is too low or the measurement is wrong";
}

double fit_kernel_model(platforms::Platform& platform, const platforms::KernelProfile& measured,
                        const FittedPoint& point) {
  const auto measured_s = measured.seconds(point.key, point.batch);
  if (!measured_s) throw InputError("kernel model check: the profile has no " + describe(point) + " to fit to");
  const ModelSpec model = build_model(point.key.model);
  const std::size_t layer = layer_index(model, point.key.layer);
  // A point measured faster than the model at peak (the clock read while the VM ran slower, a turbo step) is fitted
  // and flagged, not refused: the user sees the whole check, and the flag says which bound the point crossed.
  const double efficiency = solve_kernel_efficiency(
      platform, "conv", *measured_s,
      [&](const platforms::Platform& probe) {
        return predicted_layer_seconds(probe, model, layer, point.key.phase, point.batch, point.key.threads);
      },
      "the measured " + describe(point), kFitCeiling);
  std::string source = "FITTED: the model's time of " + describe(point) + " equals the measured " +
                       significant(*measured_s * 1e3, 4) + " ms";
  if (efficiency > 1) source += "; " + above_peak_flag(efficiency);
  set_kernel_efficiency(platform, "conv", efficiency, source);
  return efficiency;
}

KernelCheckSummary summarize(const std::vector<KernelCheckRow>& rows) {
  KernelCheckSummary summary;
  std::vector<double> errors;
  for (const KernelCheckRow& row : rows) {
    if (row.fitted) continue;
    const double error = row.error();
    errors.push_back(std::abs(error));
    summary.mean_error += error;
    if (std::abs(error) <= 0.15) ++summary.within_15;
    if (summary.worst == nullptr || std::abs(error) > std::abs(summary.worst->error())) summary.worst = &row;
  }
  summary.rows = static_cast<int>(errors.size());
  if (!errors.empty()) {
    summary.mean_error /= static_cast<double>(errors.size());
    std::sort(errors.begin(), errors.end());
    const std::size_t mid = errors.size() / 2;
    summary.median_abs_error = errors.size() % 2 == 1 ? errors[mid] : (errors[mid - 1] + errors[mid]) / 2;
  }
  return summary;
}

}  // namespace dsgd::simulate
