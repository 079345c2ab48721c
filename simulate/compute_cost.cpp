#include "simulate/compute_cost.hpp"

#include <algorithm>
#include <cmath>

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
