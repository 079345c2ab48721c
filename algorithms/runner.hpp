#pragma once
// Training with any algorithm of the catalog, as a WorkerFunction for any executor (threads, MPI, SimGrid): builds
// each rank's Trainer and algorithm, runs rounds of `eval_every` iterations, evaluates rank 0's model after each
// round, and stops at the budget -- one decision, broadcast from rank 0, for every algorithm.
//
// Time. Training time is rank 0's clock summed over rounds, each round ending when every rank has finished it (a
// small allreduce of the round's losses is the barrier); evaluations are excluded. The time breakdown of a rank is
// likewise the sum of its rounds'.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/checkpoint.hpp"
#include "core/comm.hpp"
#include "core/data/dataset.hpp"
#include "core/interrupt.hpp"
#include "core/stats.hpp"

namespace dsgd::algorithms {

// Training stops at the first budget reached (0: not set; at least one must be set).
struct Budget {
  std::int64_t iterations = 0;    // per worker
  double seconds = 0;             // training time, evaluations excluded
  double target_accuracy = 0;     // test accuracy in (0, 1]; alone, it runs under a 600 s cap
  std::int64_t eval_every = 100;  // iterations per worker between evaluations: a multiple of the period
};

struct RunOptions {
  std::string algorithm = "sync-sgd";
  int workers = 4;
  std::string model = "lenet";
  Hyperparameters hyper;
  Budget budget;
  int threads_per_rank = 1;
  // Where each rank's forward and backward passes run: "cpu", or "cuda" (one GPU per rank, round robin over the
  // visible devices; algorithms/trainer.hpp "Memory").
  std::string backend = "cpu";
  CheckpointOptions checkpoint;  // --checkpoint, --checkpoint-every, --resume (algorithms/run_checkpoint.hpp)
  // Once requested, rank 0 stops the run after the current round, with stop_reason "interrupted" (the caller holds
  // an Interrupt::Watch). Null: nothing interrupts.
  const Interrupt* interrupt = nullptr;
};

// The training and test sets, loaded once by the caller (shared by the ranks of a process).
struct RunData {
  std::shared_ptr<const data::Dataset> train;
  std::shared_ptr<const data::Dataset> test;
};

// One evaluation, after a round.
struct RunPoint {
  std::int64_t iterations = 0;  // per worker
  double images = 0;            // all workers together
  double seconds = 0;           // training time so far
  double test_accuracy = 0;
  double test_loss = 0;
  double train_loss = 0;  // mean over the round's batches, all workers
};

struct RunResult {
  AlgorithmInfo info;
  int ranks = 0;
  std::vector<RunPoint> curve;
  std::int64_t iterations = 0;  // per worker
  double train_seconds = 0;
  double images_per_second = 0;     // all workers together
  double time_to_target_s = -1;     // training time when the target accuracy was first reached, or -1
  std::string stop_reason;          // "iterations", "seconds", "target accuracy", "interrupted"
  std::vector<Breakdown> per_rank;  // training rounds only; left empty in a size-only world (the executor has them)
  // The first round's share of per_rank (oneDNN creates its primitives, pages fault in): per_rank minus it is the
  // steady state. Filled where per_rank is.
  std::vector<Breakdown> first_round_per_rank;
  // The staleness of the pushes a parameter server (rank 0) served, in updates (algorithms/parameter_server.hpp's
  // UpdateClock); empty for algorithms without one.
  CountHistogram staleness;
  // SSP's staleness in clocks (ssp-sgd: Trainer::clock_staleness of rank 0), at most the bound; empty otherwise.
  CountHistogram clock_staleness;
  // Rank 0's communication that ran beside its compute steps (streams: Trainer::overlapped_comm_s), in seconds over
  // the training rounds; 0 for algorithms without a stream. Its exposed communication is in per_rank.
  double overlapped_comm_s = 0;
  // FNV-1a of the bytes of the final model of record: equal hashes, bit-identical weights.
  std::uint64_t parameters_hash = 0;
  // Bytes each rank sent in the training rounds (Comm::bytes_sent, the runner's own messages left out), by rank;
  // empty for a rank that did not report (the analytic level runs rank 0 alone).
  std::vector<std::optional<std::uint64_t>> bytes_sent_per_rank;
  // What the algorithm counted (Algorithm::counters), summed over the ranks at the end of the run; empty for most.
  std::map<std::string, double> counters;
};

// Bytes sent per iteration per worker: the mean over the workers that reported, divided by the iterations per
// worker; with `master`, the master's (rank 0) instead. Empty where nothing was reported (or no master).
std::optional<double> bytes_sent_per_iteration(const RunResult& result, bool master = false);

// Checks `options` (names, budget, sizes); InputError / UnknownNameError otherwise.
void check_run_options(const RunOptions& options);
// The world a run needs: its workers, plus one rank for a master (--servers ranks for a sharded server).
int world_size(const RunOptions& options);

// The body every rank runs. On rank 0 it fills `*result` (which must outlive the run) and calls `progress` after
// each evaluation; the other ranks send their breakdowns to rank 0 at the end. Throws what the Trainer, the
// algorithm and the Comm throw.
WorkerFunction training_worker(const RunOptions& options, const RunData& data, RunResult* result,
                               std::function<void(const RunPoint&)> progress = {});

}  // namespace dsgd::algorithms
