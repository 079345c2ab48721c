#pragma once
// The mechanics the master-worker parameter-server algorithms share (seed 000 §4): a master serving pushes first
// come, first served (core/collectives.hpp's parameter server), workers pushing every `period` iterations. The
// algorithm files (async_sgd.cpp, async_msgd.cpp, async_easgd.cpp, async_measgd.cpp, ssp_sgd.cpp) pick what is
// pushed, how the master updates and whether a staleness bound holds the replies back.
//
// Sharding (ps-lite's key ranges): with Hyperparameters::servers = S > 1, ranks 0..S-1 are servers, each owning
// Trainer::shard(rank) of the packed parameters and serving it with the same handler as a single master would;
// workers push and pull every shard at once (core/collectives.hpp sharded_parameter_server_exchange). With S = 1
// every message and step is that of the unsharded server.

#include <memory>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/trainer.hpp"

namespace dsgd::algorithms {

// How many pushes each server serves in a round of `iterations` per worker.
std::size_t pushes_per_round(const Trainer& trainer, std::int64_t iterations);

// A server's count of the updates it applied. The staleness of a push is the number of other workers' updates the
// server applied since the pushing worker's previous exchange (whose reply it has): 0 with one worker, about P - 1
// with P workers of equal speed served in turn, and it grows for a worker slower than the others. Recorded in
// Trainer::staleness(); with sharding every server keeps its own, and rank 0's (shard 0's) is reported.
class UpdateClock {
 public:
  explicit UpdateClock(const Trainer& trainer);
  // A push of `worker_rank` is applied now.
  void on_push(Trainer& trainer, int worker_rank);

 private:
  std::int64_t updates_ = 0;
  std::vector<std::int64_t> seen_;  // per rank: updates_ after its previous exchange
};

// What the parameter-server algorithms share besides the update rule: this rank's shard (a server's) and the
// gather of the other servers' shards into rank 0's model of record.
class ShardedServer : public Algorithm {
 public:
  // With S > 1 servers, rank 0's model of record is its own shard 0 plus the shards servers 1..S-1 sent at the end
  // of the round (outside the round's training time).
  void model_of_record(Trainer& trainer, std::span<float> parameters) override;

 protected:
  explicit ShardedServer(Trainer& trainer);
  // A server, before it touches its shard in a round: waits until the previous round's shard has left.
  void begin_serving();
  // A server, after its round: servers 1..S-1 start sending the shard (parameters() at shard_) to rank 0.
  void end_serving(Trainer& trainer);

  Shard shard_;  // a server's own range of the parameters

 private:
  RequestPtr shard_sent_;  // servers 1..S-1: the shard on its way to rank 0
};

// Async SGD / Async MSGD / SSP SGD: workers push their gradient (averaged over the period), the master applies it
// with its optimiser (momentum `server_momentum`: 0 for Async SGD and SSP, mu for Async MSGD, seed 000 eqs. 3-4)
// and replies with its weights, which replace the worker's. With a staleness bound (SSP) a reply is held back until
// the bound allows the worker to go on; without one, replies go out at once.
class GradientServer final : public ShardedServer {
 public:
  // `staleness_bound` < 0: none (asynchronous).
  GradientServer(Trainer& trainer, float server_momentum, std::int64_t staleness_bound = -1);
  void run_round(Trainer& trainer, std::int64_t iterations) override;

 private:
  // SSP's server side of a round (staleness_bound_ >= 0): applies pushes as they come, and answers a worker's c-th
  // push once every worker has pushed at least c - s times. With s = 0 (BSP) it takes each clock's pushes in worker
  // order instead, so the run is deterministic.
  void serve_bounded(Trainer& trainer, std::int64_t iterations, const PushHandler& handler);

  std::unique_ptr<nn::Sgd> sgd_;    // a server's, over its shard
  std::vector<float> accumulated_;  // a worker's gradient sum over the period
  UpdateClock clock_;               // a server's
  std::int64_t staleness_bound_;
  std::vector<std::int64_t> clocks_;  // SSP, a server's: pushes served per worker index
  std::int64_t leading_clock_ = 0;    // SSP: the most pushes any worker has had served
};

// Async EASGD / Async MEASGD: workers take local steps (momentum `worker_momentum`: 0 for EASGD, mu for MEASGD,
// seed 000 eqs. 5-6) and every period push their weights; the master replies with its centre W~ and moves it,
// W~ += alpha (W_i - W~), while the worker moves back, W_i -= alpha (W_i - W~) (eqs. 1-2).
class ElasticServer final : public ShardedServer {
 public:
  ElasticServer(Trainer& trainer, float worker_momentum);
  void run_round(Trainer& trainer, std::int64_t iterations) override;

 private:
  std::unique_ptr<nn::Sgd> sgd_;  // a worker's
  std::vector<float> centre_;     // the centre the master replied with (a worker), or the reply (the master)
  UpdateClock clock_;             // a server's
};

// A worker's half of EASGD's elastic pair: W_i -= alpha (W_i - centre), charged to `category`.
void elastic_move(Trainer& trainer, float* weights, const float* centre, Category category);
// The master's half: centre += alpha (W_i - centre), charged to cpu update; on `count` floats (a server's shard)
// or the whole model.
void pull_centre(Trainer& trainer, float* centre, const float* worker, std::size_t count);
void pull_centre(Trainer& trainer, float* centre, const float* worker);

}  // namespace dsgd::algorithms
