#pragma once
// The mechanics the asynchronous master-worker algorithms share (seed 000 §4): a master serving pushes first come,
// first served (core/collectives.hpp's parameter server), workers pushing every `period` iterations. The algorithm
// files (async_sgd.cpp, async_msgd.cpp, async_easgd.cpp, async_measgd.cpp) pick what is pushed and how the
// master updates; they differ only in momentum.

#include <memory>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/trainer.hpp"

namespace dsgd::algorithms {

// How many pushes the master serves in a round of `iterations` per worker.
std::size_t pushes_per_round(const Trainer& trainer, std::int64_t iterations);

// The master's count of the updates it applied. The staleness of a push is the number of other workers' updates the
// master applied since the pushing worker's previous exchange (whose reply it has): 0 with one worker, about P - 1
// with P workers of equal speed served in turn, and it grows for a worker slower than the others. Recorded in
// Trainer::staleness().
class UpdateClock {
 public:
  explicit UpdateClock(const Trainer& trainer);
  // A push of `worker_rank` is applied now.
  void on_push(Trainer& trainer, int worker_rank);

 private:
  std::int64_t updates_ = 0;
  std::vector<std::int64_t> seen_;  // per rank: updates_ after its previous exchange
};

// Async SGD / Async MSGD: workers push their gradient (averaged over the period), the master applies it with its
// optimiser (momentum `server_momentum`: 0 for Async SGD, mu for Async MSGD, seed 000 eqs. 3-4) and replies with
// its weights, which replace the worker's.
class GradientServer final : public Algorithm {
 public:
  GradientServer(Trainer& trainer, float server_momentum);
  void run_round(Trainer& trainer, std::int64_t iterations) override;

 private:
  std::unique_ptr<nn::Sgd> sgd_;    // the master's
  std::vector<float> accumulated_;  // a worker's gradient sum over the period
  UpdateClock clock_;               // the master's
};

// Async EASGD / Async MEASGD: workers take local steps (momentum `worker_momentum`: 0 for EASGD, mu for MEASGD,
// seed 000 eqs. 5-6) and every period push their weights; the master replies with its centre W~ and moves it,
// W~ += alpha (W_i - W~), while the worker moves back, W_i -= alpha (W_i - W~) (eqs. 1-2).
class ElasticServer final : public Algorithm {
 public:
  ElasticServer(Trainer& trainer, float worker_momentum);
  void run_round(Trainer& trainer, std::int64_t iterations) override;

 private:
  std::unique_ptr<nn::Sgd> sgd_;  // a worker's
  std::vector<float> centre_;     // the centre the master replied with (a worker), or the reply (the master)
  UpdateClock clock_;             // the master's
};

// A worker's half of EASGD's elastic pair: W_i -= alpha (W_i - centre), charged to `category`.
void elastic_move(Trainer& trainer, float* weights, const float* centre, Category category);
// The master's half: centre += alpha (W_i - centre), charged to cpu update.
void pull_centre(Trainer& trainer, float* centre, const float* worker);

}  // namespace dsgd::algorithms
