#include "simulate/compute_cost.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.hpp"
#include "core/splitmix.hpp"

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

}  // namespace

double compute_seconds(const RankSite& site, const ComputeStep& step) {
  // By shape where both sides know it: the step its kernels, the processor how it runs them. A shared chip's
  // ranks keep their measured classes (its alone-versus-busy model has no kernel counterpart yet).
  if (site.kernels && !step.kernels.empty() && site.chip < 0) {
    double seconds = 0;
    for (const LayerKernel& kernel : step.kernels)
      seconds += kernel_cost(*site.kernels, kernel, step.resident_bytes).seconds;
    return seconds;
  }
  return roofline_seconds(site, site.efficiency, step);
}

double compute_seconds_alone(const RankSite& site, const ComputeStep& step) {
  return site.chip < 0 ? compute_seconds(site, step) : roofline_seconds(site, site.efficiency_alone, step);
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
