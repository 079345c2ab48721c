#pragma once
// The four Lasso schedulers of STRADS's comparison (seed 003 Algorithm 2; docs/strads.md "Schedulers"): which
// coordinates of beta one round updates together, all from the same residual.
//   serial          one coordinate per round, cyclically (sequential coordinate descent)
//   shotgun         C coordinates uniformly at random (Bradley et al.'s Shotgun): nothing stops two correlated
//                   coordinates from moving together, which is how it slows or diverges on correlated data
//   strads-static   C consecutive coordinates, round robin over the features
//   strads-dynamic  L > C candidates drawn with probability proportional to (delta beta)^2 (plus a floor, so no
//                   coordinate starves), a dependency graph over them with an edge where |x_a . x_b| > tau
//                   (Boost.Graph), an independent set of it in priority order, its first C

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/strads/lasso_problem.hpp"

namespace dsgd::algorithms::strads {

enum class SchedulerKind { kSerial, kShotgun, kStatic, kDynamic };
std::string_view to_string(SchedulerKind kind);
// Throws UnknownNameError for another name.
SchedulerKind scheduler_from_string(std::string_view name);
std::vector<std::string> scheduler_names();

struct SchedulerOptions {
  SchedulerKind kind = SchedulerKind::kDynamic;
  std::size_t coordinates = 8;  // C, per round (serial: 1 whatever this says)
  std::size_t candidates = 0;   // L, strads-dynamic (0: 2 C)
  double tau = 0.1;             // strads-dynamic: |correlation| above which two coordinates depend
  std::uint64_t seed = 1;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // The next round's coordinates, distinct. `change` holds each coordinate's last |delta beta| (the dynamic
  // scheduler's priorities; the others ignore it).
  virtual std::vector<std::uint32_t> next(std::span<const double> change) = 0;
  // What the last next() cost, in operations (an estimate, for the simulated clock).
  virtual double cost_flops() const = 0;
};

// A scheduler over `problem`'s features (the dynamic one reads its columns for correlations; `problem` must outlive
// it). Throws InputError for C = 0, C > M, L < C or tau outside [0, 1].
std::unique_ptr<Scheduler> make_scheduler(const LassoProblem& problem, const SchedulerOptions& options);

// strads-dynamic's graph step alone: of `candidates` (in priority order, highest first) those a greedy independent
// set of the dependency graph keeps (edge where |x_a . x_b| > tau), in that order. The set is maximal: every
// candidate left out depends on one kept before it.
std::vector<std::uint32_t> independent_candidates(const LassoProblem& problem,
                                                  std::span<const std::uint32_t> candidates, double tau);

}  // namespace dsgd::algorithms::strads
