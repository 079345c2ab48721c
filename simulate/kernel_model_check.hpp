#pragma once
// The kernel model by shape (simulate/kernel_cost.hpp) held against measured per-layer times: for each layer,
// phase, batch and thread count of a kernel profile (platforms/kernel_profile.hpp), the model's prediction beside
// the measurement. The model never reads the profile; at most its one efficiency is FITTED to one of its points,
// which the check then names (`dsgd bench layers`; docs/simulation.md "Kernels by shape").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model_zoo.hpp"
#include "platforms/kernel_profile.hpp"
#include "platforms/platform.hpp"

namespace dsgd::simulate {

struct KernelCheckRow {
  std::string model;
  std::string layer;
  platforms::ProfilePhase phase = platforms::ProfilePhase::kForward;
  std::int64_t batch = 0;
  int threads = 0;
  double measured_s = 0;
  double predicted_s = 0;
  bool fitted = false;  // the point the model's efficiency was fitted to (its error 0 by construction)
  double error() const { return predicted_s / measured_s - 1; }
};

// The model's time of layer `layer` of `model` in `phase` at `batch` images on `threads` of the CPU's cores (the
// CPU's `kernels` at a share threads / cores of it), the layer run alone as measure_layer_profile runs it: its own
// tensors are all it holds. "backward" is its backward-data and backward-weights kernels together. Throws
// InputError where the platform's CPU has no kernel model, or threads is not in [1, cores].
double predicted_layer_seconds(const platforms::Platform& platform, const ModelSpec& model, std::size_t layer,
                               platforms::ProfilePhase phase, std::int64_t batch, int threads);

// Every point of `measured` whose model is in the zoo, predicted. `fitted` marks the row at that key and batch.
struct FittedPoint {
  platforms::ProfileKey key;
  std::int64_t batch = 0;
};
std::vector<KernelCheckRow> check_kernel_model(const platforms::Platform& platform,
                                               const platforms::KernelProfile& measured,
                                               const std::optional<FittedPoint>& fitted = std::nullopt);

// The CPU kernel model's efficiency at which it predicts `point` of `measured` exactly (log-bisection), set on
// `platform` with a source saying it was FITTED there. An efficiency above 1 (the point ran faster than the model
// at peak, a physical bound) is kept and its source flagged with above_peak_flag. Throws InputError where the
// profile lacks the point or the point needs more than kFitCeiling x peak.
inline constexpr double kFitCeiling = 4.0;
std::string above_peak_flag(double efficiency);
double fit_kernel_model(platforms::Platform& platform, const platforms::KernelProfile& measured,
                        const FittedPoint& point);

struct KernelCheckSummary {
  int rows = 0;       // predicted points, the fitted one left out
  int within_15 = 0;  // |error| <= 15%
  double median_abs_error = 0;
  double mean_error = 0;  // signed: negative, the model is too fast
  const KernelCheckRow* worst = nullptr;
};
KernelCheckSummary summarize(const std::vector<KernelCheckRow>& rows);

}  // namespace dsgd::simulate
