#pragma once
// STRADS's scheduled model parallelism (SchMP; seed 003, Kim et al. EuroSys '16; docs/strads.md): a program
// supplies schedule(), update() and aggregate(), and the engine runs rounds over a Comm, so one program runs on
// threads, under mpirun and in SimGrid. Every rank is a worker holding a shard of the data; rank 0 is also the
// scheduler and the aggregator. One round:
//   1. rank 0: set = schedule(); broadcast to every worker (a count and the parameter ids)
//   2. every worker: partial = update(set) over its shard
//   3. reduce the partials (element-wise sums) to rank 0; rank 0: result = aggregate(set, sums)
//   4. broadcast the result; every worker: commit(set, result)
// Every `eval_every` rounds the engine sums the workers' local objective terms, and rank 0 decides for all
// whether to stop (rounds, time, target, divergence).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/comm.hpp"

namespace dsgd::algorithms::strads {

class SchmpProgram {
 public:
  virtual ~SchmpProgram() = default;
  // The largest set schedule() returns (fixes the size of the round's messages).
  virtual std::size_t max_set() const = 0;
  // Rank 0: the parameters to update this round (distinct, at most max_set()); its cost a compute step on `comm`.
  virtual std::vector<std::uint32_t> schedule(Comm& comm) = 0;
  // Every worker: its partial results for `set`, one float each, over its shard.
  virtual void update(Comm& comm, std::span<const std::uint32_t> set, std::span<float> partial) = 0;
  // Rank 0: the new values of `set` from the partials summed over the workers.
  virtual void aggregate(Comm& comm, std::span<const std::uint32_t> set, std::span<const float> sums,
                         std::span<float> result) = 0;
  // Every worker (rank 0 too): adopts `result` for `set` (parameters and any state that depends on them).
  virtual void commit(Comm& comm, std::span<const std::uint32_t> set, std::span<const float> result) = 0;
  // Every worker: its share of the objective (summed over the workers by the engine).
  virtual double local_objective() const = 0;
  // Rank 0: the objective from the workers' summed shares (adds the model's own terms, e.g. a penalty).
  virtual double objective(double summed_shares) const = 0;
};

struct SchmpOptions {
  std::int64_t rounds = 1000;  // at most
  double seconds = 0;          // at most this much of the clock (0: no limit)
  std::int64_t eval_every = 10;
  double target_objective = 0;  // stop once the objective is at or below it (0: never)
  // Stop as "diverged" once the objective is not finite or exceeds this many times the first one.
  double divergence_factor = 1e3;
};

struct SchmpPoint {
  std::int64_t rounds = 0;
  double seconds = 0;
  double objective = 0;
  std::uint64_t updates = 0;  // parameter updates so far (sum of set sizes)
};

struct SchmpResult {
  std::vector<SchmpPoint> curve;  // rank 0's; the first point is before any round
  std::int64_t rounds = 0;
  double seconds = 0;
  std::uint64_t updates = 0;
  std::string stop_reason;  // "rounds", "seconds", "target objective", "diverged"
};

// Runs `program` until a stop; every rank returns the same rounds and stop reason, rank 0 the curve.
SchmpResult run_schmp(Comm& comm, SchmpProgram& program, const SchmpOptions& options);

}  // namespace dsgd::algorithms::strads
