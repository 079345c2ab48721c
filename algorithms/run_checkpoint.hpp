#pragma once
// Checkpoints of `dsgd run` (docs/checkpoint.md) for the training runner (algorithms/runner.hpp): what identifies a
// run, and every rank's state saved and restored through its Comm -- gathered to rank 0, which writes one file
// atomically (core/checkpoint.hpp), and sent back to each rank on resume. Between rounds only, where a synchronous
// algorithm's ranks have all finished the same iterations, so a resumed run goes on bit for bit.

#include <cstdint>
#include <optional>
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/runner.hpp"
#include "algorithms/trainer.hpp"
#include "core/checkpoint.hpp"
#include "core/comm.hpp"

namespace dsgd::algorithms {

// Every option that shapes a run's weights: algorithm, workers and ranks, model, the hyper-parameters, seed and CPU
// threads per rank -- not the budget nor the evaluation, so a resumed run may train further.
Identity run_identity(const RunOptions& options);

// InputError for what checkpoints do not cover: an asynchronous algorithm (naming it), a model whose layers keep
// state from batch to batch, an interval that is not a positive multiple of --eval-every. Nothing without a path.
void check_checkpoint_options(const RunOptions& options);

// Before a run, in the process that starts it: nothing without --resume; where the file is missing, nullopt (a fresh
// start); else reads it and checks its integrity, the options' identity and that --iterations is not spent, and
// returns the iteration it resumes from. InputError naming the file otherwise.
std::optional<std::int64_t> check_resume(const RunOptions& options);

// The runner's own totals of one rank, which a checkpoint carries on.
struct RunnerTotals {
  Breakdown training;
  Breakdown first_round;
  std::uint64_t training_bytes = 0;
};

// One rank's side of a run's checkpoints.
class RunCheckpoint {
 public:
  RunCheckpoint(const RunOptions& options, const RunData& data, Comm& comm)
      : options_(options), data_(data), comm_(comm) {}

  bool enabled() const { return !options_.checkpoint.path.empty(); }
  // Collective, before the first round: with --resume and the file there, rank 0 reads and checks it (the data and
  // the nodes too) and sends every rank its state, which is restored into `trainer`, `algorithm` and `totals`; rank
  // 0 restores the history into `*result`. Returns the iterations per worker done (0: a fresh start).
  std::int64_t restore(Trainer& trainer, Algorithm& algorithm, RunnerTotals& totals, RunResult* result);
  // Whether a checkpoint is due after the round that brought the run to `done` iterations (`stop`: the last one).
  bool due(std::int64_t done, bool stop) const;
  // Collective: every rank's state to rank 0, which writes the file atomically.
  void save(Trainer& trainer, Algorithm& algorithm, const RunnerTotals& totals, const RunResult* result,
            std::int64_t done);

 private:
  Identity identity() const;  // run_identity, the data and (for hierarchical allreduces) the nodes

  const RunOptions& options_;
  const RunData& data_;
  Comm& comm_;
};

}  // namespace dsgd::algorithms
