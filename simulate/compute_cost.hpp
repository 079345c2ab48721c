#pragma once
// What a compute step costs on a rank's site, shared by the SimGrid executor and the analytic level (neither
// needs the other): the roofline time and the node's compute noise.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/comm.hpp"
#include "platforms/platform.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {

// A step's time on `site`. Where the step names its layer kernels and the site has a kernel profile or a kernel
// model, the sum of its kernels, each priced by the first that applies: the profile's measured time
// (platforms/kernel_profile.hpp), the kernel model by shape (simulate/kernel_cost.hpp; not on a shared chip), the
// roofline of the kernel alone at the step's class rate. Otherwise the step's roofline: max(flops / (peak x the
// kernel class's efficiency), bytes / memory bandwidth); a batch copy ("copy") moves its bytes at the copy
// bandwidth x the class's efficiency. A bandwidth of 0 makes memory traffic free.
double compute_seconds(const RankSite& site, const ComputeStep& step);

// How compute_seconds prices a step's kernels on a site: how many by each source, for the results to say.
struct KernelPricing {
  enum Source { kProfile, kModel, kClassRate };
  int kernels[3] = {0, 0, 0};  // by Source
  // "14 kernels: 10 from the kernel profile, 4 by the kernel model"; "whole steps at their class's rate" for none.
  std::string describe() const;
};
KernelPricing kernel_pricing(const RankSite& site, const ComputeStep& step);

// The same step with the chip's other cores idle (RankSite::efficiency_alone); compute_seconds where the site is on
// no shared chip.
double compute_seconds_alone(const RankSite& site, const ComputeStep& step);

// How long a step of `alone_s` (the chip's other cores idle) and `busy_s` (every core busy) takes under a steady
// `load` of the chip (computing ranks + the waiting ranks' share; at least 1, this step's own) on a chip of `cores`
// cores (platforms::SharedChip): interpolated between the two by the busy cores, and shared in turns beyond them.
double shared_chip_seconds(double alone_s, double busy_s, double load, int cores);

// The load of `site`'s chip while `computing` of its ranks compute and the others wait.
double chip_load(const RankSite& site, int computing);

// A step's time while every rank computes at once (a synchronous algorithm's forward/backward): compute_seconds,
// or on a shared chip shared_chip_seconds with all the chip's ranks computing.
double all_computing_seconds(const RankSite& site, const ComputeStep& step);

// Compute noise (platforms::Noise): the factor of a node's compute step. Ranks of one node share it (a node is
// slow or fast as a whole), drawn from a counter-based generator of (seed, node, step), so a simulation repeats
// exactly and does not depend on the order ranks run in.
double noise_factor(const platforms::Noise& noise, std::uint64_t seed, int node, std::uint64_t step);

// The compute noise of a simulation's nodes, persistent where the platform's noise has a correlation time:
// without one, factor() is noise_factor (independent per step); with one, a node's factor is the distribution's
// quantile of an Ornstein-Uhlenbeck standard normal advanced to the step's start in simulated time, z' = r z +
// sqrt(1 - r^2) g with r = exp(-dt / correlation_s) and g a counter-based draw of (seed, node, the node's draws).
// Ranks of one node share the state: a call at or before the node's last step time returns the last factor.
// Deterministic for a deterministic order of calls per node.
class ComputeNoise {
 public:
  ComputeNoise(platforms::Noise noise, std::uint64_t seed) : noise_(std::move(noise)), seed_(seed) {}

  // The factor of `node`'s compute step starting at `now_s`, the `step`-th of its rank: the spread's draw times the
  // node's straggler slowdown, if it has one.
  double factor(int node, std::uint64_t step, double now_s);
  const platforms::Noise& noise() const { return noise_; }

 private:
  double spread_factor(int node, std::uint64_t step, double now_s);
  struct NodeState {
    bool started = false;
    double z = 0;
    double at_s = 0;
    std::uint64_t draws = 0;
  };
  platforms::Noise noise_;
  std::uint64_t seed_;
  std::vector<NodeState> nodes_;  // by node, grown as nodes compute
};

}  // namespace dsgd::simulate
