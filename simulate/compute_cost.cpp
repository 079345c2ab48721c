#include "simulate/compute_cost.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "core/error.hpp"
#include "core/splitmix.hpp"
#include "platforms/kernel_profile.hpp"

namespace dsgd::simulate {

namespace {

double roofline_seconds(const RankSite& site, const platforms::KernelEfficiency& efficiencies,
                        const ComputeStep& step) {
  const double efficiency = efficiencies.of(step.kernel_class);
  double seconds = step.flops > 0 ? step.flops / (site.peak_flops * efficiency) : 0.0;
  const double bandwidth =
      step.kernel_class == "copy" ? site.copy_bandwidth_Bps * efficiency : site.memory_bandwidth_Bps;
  if (step.bytes > 0 && bandwidth > 0) seconds = std::max(seconds, step.bytes / bandwidth);
  return seconds;
}

// The profile's time of `kernel` on `site`, if it covers it. A backward-data or backward-weights kernel the profile
// gives only as the layer's whole "backward" takes its FLOPs' share of it among the layer's backward kernels in
// `step` (each does the forward's multiply-adds, so they split it evenly where both run).
std::optional<double> profiled_seconds(const RankSite& site, const ComputeStep& step, const LayerKernel& kernel) {
  if (!site.profile || kernel.model.empty()) return std::nullopt;
  using platforms::ProfilePhase;
  const auto key = [&](ProfilePhase phase) {
    return platforms::ProfileKey{kernel.model, kernel.layer_name, phase, site.threads};
  };
  if (kernel.pass == KernelPass::kForward) return site.profile->seconds(key(ProfilePhase::kForward), kernel.batch);
  const ProfilePhase own =
      kernel.pass == KernelPass::kBackwardData ? ProfilePhase::kBackwardData : ProfilePhase::kBackwardWeights;
  if (const auto seconds = site.profile->seconds(key(own), kernel.batch)) return seconds;
  const auto whole = site.profile->seconds(key(ProfilePhase::kBackward), kernel.batch);
  if (!whole) return std::nullopt;
  double layer_flops = 0;
  for (const LayerKernel& other : step.kernels) {
    if (other.layer == kernel.layer && other.pass != KernelPass::kForward) layer_flops += other.flops;
  }
  return layer_flops > 0 ? *whole * kernel.flops / layer_flops : *whole;
}

// Where `kernel` gets its price on `site`: its profile, else its kernel model, else the step's class rate.
KernelPricing::Source pricing_source(const RankSite& site, const ComputeStep& step, const LayerKernel& kernel) {
  if (profiled_seconds(site, step, kernel)) return KernelPricing::kProfile;
  return site.kernels && site.chip < 0 ? KernelPricing::kModel : KernelPricing::kClassRate;
}

// Whether the step is priced kernel by kernel: it names its kernels, and a profile or a kernel model applies.
bool priced_by_kernel(const RankSite& site, const ComputeStep& step) {
  return !step.kernels.empty() && (site.profile || (site.kernels && site.chip < 0));
}

// The step's kernels one by one (pricing_source), the class rates taken from `efficiencies` (the alone ones on a
// shared chip); empty where the step is priced whole by its class.
std::optional<double> kernels_seconds(const RankSite& site, const platforms::KernelEfficiency& efficiencies,
                                      const ComputeStep& step) {
  if (!priced_by_kernel(site, step)) return std::nullopt;
  double seconds = 0;
  for (const LayerKernel& kernel : step.kernels) {
    if (const auto profiled = profiled_seconds(site, step, kernel)) {
      seconds += *profiled;
    } else if (site.kernels && site.chip < 0) {
      seconds += kernel_cost(*site.kernels, kernel, step.resident_bytes).seconds;
    } else {
      const ComputeStep alone{.flops = kernel.flops, .kernel_class = step.kernel_class, .bytes = kernel.bytes};
      seconds += roofline_seconds(site, efficiencies, alone);
    }
  }
  return seconds;
}

}  // namespace

KernelPricing kernel_pricing(const RankSite& site, const ComputeStep& step) {
  KernelPricing pricing;
  if (!priced_by_kernel(site, step)) return pricing;
  for (const LayerKernel& kernel : step.kernels) ++pricing.kernels[pricing_source(site, step, kernel)];
  return pricing;
}

std::string KernelPricing::describe() const {
  const int total = kernels[kProfile] + kernels[kModel] + kernels[kClassRate];
  if (total == 0) return "whole steps at their class's rate";
  std::string text = std::to_string(total) + " kernels: ";
  const char* names[] = {"from the kernel profile", "by the kernel model", "at their class's rate"};
  bool first = true;
  for (int source = kProfile; source <= kClassRate; ++source) {
    if (kernels[source] == 0) continue;
    text += (first ? "" : ", ") + std::to_string(kernels[source]) + " " + names[source];
    first = false;
  }
  return text;
}

double compute_seconds(const RankSite& site, const ComputeStep& step) {
  // Kernel by kernel where the step knows its kernels and the processor has a profile or a kernel model. On a
  // shared chip a profile's times are those of a core computing alone; with every core busy each takes the
  // class's measured slowdown (its alone over its busy efficiency). A shared chip's alone-versus-busy model has no
  // kernel-model counterpart yet, so there only the profile applies.
  if (site.chip < 0) {
    if (const auto seconds = kernels_seconds(site, site.efficiency, step)) return *seconds;
    return roofline_seconds(site, site.efficiency, step);
  }
  if (const auto alone = kernels_seconds(site, site.efficiency_alone, step)) {
    return *alone * site.efficiency_alone.of(step.kernel_class) / site.efficiency.of(step.kernel_class);
  }
  return roofline_seconds(site, site.efficiency, step);
}

double compute_seconds_alone(const RankSite& site, const ComputeStep& step) {
  if (site.chip < 0) return compute_seconds(site, step);
  if (const auto alone = kernels_seconds(site, site.efficiency_alone, step)) return *alone;
  return roofline_seconds(site, site.efficiency_alone, step);
}

double shared_chip_seconds(double alone_s, double busy_s, double load, int cores) {
  DSGD_ENFORCE(load >= 1 && cores >= 1, "shared chip with a load below 1 or no core");
  const double busy_cores = std::min(load, static_cast<double>(cores));
  double seconds = cores == 1 ? busy_s : alone_s + (busy_s - alone_s) * (busy_cores - 1) / (cores - 1);
  if (load > cores) seconds *= load / cores;
  return seconds;
}

double chip_load(const RankSite& site, int computing) {
  return computing + site.chip_waiting_share * (site.chip_ranks - computing);
}

double all_computing_seconds(const RankSite& site, const ComputeStep& step) {
  if (site.chip < 0) return compute_seconds(site, step);
  return shared_chip_seconds(compute_seconds_alone(site, step), compute_seconds(site, step),
                             chip_load(site, site.chip_ranks), site.chip_cores);
}

namespace {

// A uniform in (0, 1) from 53 bits.
double unit_uniform(std::uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

// A uniform in (0, 1) and a standard normal (Box-Muller, from it and a second uniform) from a counter-based
// generator of (seed, node, count).
struct Draw {
  double u1;
  double gaussian;
};

Draw draw(std::uint64_t seed, int node, std::uint64_t count) {
  const std::uint64_t key = splitmix64(splitmix64(seed ^ 0x6E6F697365ULL) ^ static_cast<std::uint64_t>(node)) ^ count;
  const double u1 = unit_uniform(splitmix64(key));
  const double u2 = unit_uniform(splitmix64(key ^ 0xA5A5A5A5A5A5A5A5ULL));
  return {u1, std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2)};
}

// The factor of a standard normal z under `noise`'s distribution (uniform: through z's normal CDF).
double factor_of(const platforms::Noise& noise, double z) {
  switch (noise.distribution) {
    case platforms::NoiseDistribution::kNormal:
      return std::max(0.0, 1.0 + noise.spread * z);
    case platforms::NoiseDistribution::kLognormal:
      return std::exp(noise.spread * z - noise.spread * noise.spread / 2);
    case platforms::NoiseDistribution::kUniform:
      return 1.0 - noise.spread + noise.spread * std::erfc(-z / std::numbers::sqrt2);  // 2 s x Phi(z)
    case platforms::NoiseDistribution::kNone:
      break;
  }
  return 1.0;
}

}  // namespace

double noise_factor(const platforms::Noise& noise, std::uint64_t seed, int node, std::uint64_t step) {
  if (noise.distribution == platforms::NoiseDistribution::kNone || noise.spread == 0) return 1.0;
  const Draw drawn = draw(seed, node, step);
  // Independent draws take a uniform factor from the uniform itself (what the results so far were drawn with).
  if (noise.distribution == platforms::NoiseDistribution::kUniform) {
    return 1.0 - noise.spread + 2.0 * noise.spread * drawn.u1;
  }
  return factor_of(noise, drawn.gaussian);
}

double ComputeNoise::factor(int node, std::uint64_t step, double now_s) {
  for (const auto& straggler : noise_.stragglers) {
    if (straggler.node == node) return straggler.slowdown * spread_factor(node, step, now_s);
  }
  return spread_factor(node, step, now_s);
}

double ComputeNoise::spread_factor(int node, std::uint64_t step, double now_s) {
  if (noise_.distribution == platforms::NoiseDistribution::kNone || noise_.spread == 0) return 1.0;
  if (!(noise_.correlation_s > 0)) return noise_factor(noise_, seed_, node, step);
  DSGD_ENFORCE(node >= 0, "compute noise of a negative node");
  const auto index = static_cast<std::size_t>(node);
  if (index >= nodes_.size()) nodes_.resize(index + 1);
  NodeState& state = nodes_[index];
  // Another rank of the node at the same time: the same factor, and no draw used (so the node's sequence does not
  // depend on how many ranks it holds).
  if (state.started && now_s <= state.at_s) return factor_of(noise_, state.z);
  const double gaussian = draw(seed_, node, state.draws++).gaussian;
  if (!state.started) {
    state.started = true;
    state.z = gaussian;  // the stationary distribution from the first step on
  } else {
    const double correlation = std::exp(-(now_s - state.at_s) / noise_.correlation_s);
    state.z = correlation * state.z + std::sqrt(1.0 - correlation * correlation) * gaussian;
  }
  state.at_s = now_s;
  return factor_of(noise_, state.z);
}

}  // namespace dsgd::simulate
