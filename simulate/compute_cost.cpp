#include "simulate/compute_cost.hpp"

#include <algorithm>
#include <cmath>

#include "core/splitmix.hpp"

namespace dsgd::simulate {

double compute_seconds(const RankSite& site, const ComputeStep& step) {
  const double efficiency = site.efficiency.of(step.kernel_class);
  double seconds = step.flops > 0 ? step.flops / (site.peak_flops * efficiency) : 0.0;
  const double bandwidth =
      step.kernel_class == "copy" ? site.copy_bandwidth_Bps * efficiency : site.memory_bandwidth_Bps;
  if (step.bytes > 0 && bandwidth > 0) seconds = std::max(seconds, step.bytes / bandwidth);
  return seconds;
}

namespace {

// A uniform in (0, 1) from 53 bits.
double unit_uniform(std::uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

}  // namespace

double noise_factor(const platforms::Noise& noise, std::uint64_t seed, int node, std::uint64_t step) {
  if (noise.distribution == platforms::NoiseDistribution::kNone || noise.spread == 0) return 1.0;
  const std::uint64_t key = splitmix64(splitmix64(seed ^ 0x6E6F697365ULL) ^ static_cast<std::uint64_t>(node)) ^ step;
  const double u1 = unit_uniform(splitmix64(key));
  const double u2 = unit_uniform(splitmix64(key ^ 0xA5A5A5A5A5A5A5A5ULL));
  const double gaussian = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
  switch (noise.distribution) {
    case platforms::NoiseDistribution::kNormal:
      return std::max(0.0, 1.0 + noise.spread * gaussian);
    case platforms::NoiseDistribution::kLognormal:
      return std::exp(noise.spread * gaussian - noise.spread * noise.spread / 2);
    case platforms::NoiseDistribution::kUniform:
      return 1.0 - noise.spread + 2.0 * noise.spread * u1;
    case platforms::NoiseDistribution::kNone:
      break;
  }
  return 1.0;
}

}  // namespace dsgd::simulate
