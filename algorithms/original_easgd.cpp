// Original EASGD (seed 000 Algorithm 1, Zhang et al. 2015): the master talks to one worker at a time in rank order.
// Every period a worker sends its weights W_i; the master replies with its centre W~ and moves it,
// W~ += alpha (W_i - W~); the worker moves back, W_i -= alpha (W_i - W~) (eqs. 1-2). The round robin serialises
// the exchanges; the workers compute meanwhile, so for/backward overlaps the master's cpu-gpu para traffic.
// Seed 000's Original EASGD* (Table 3, Fig 11) is the version without that overlap: a worker computes only in its
// turn, which the master gives it by a message, so only one worker works at a time.

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

namespace {

// The master's go-ahead to a worker in Original EASGD*.
constexpr Tag kTurnTag = kFirstCollectiveTag - 1;

class OriginalEasgd final : public Algorithm {
 public:
  OriginalEasgd(Trainer& trainer, bool serial) : serial_(serial), buffer_(trainer.model_vector()) {
    if (!trainer.is_master()) sgd_ = trainer.make_sgd(0.0F);
  }

  // The master's centre is its Trainer's weights; buffer_ is scratch.
  void visit_state(Trainer&, StateVisitor& state) override {
    if (sgd_) state.optimiser("sgd", *sgd_);
  }

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    const std::size_t n = trainer.parameter_count();
    const CollectiveOptions options{Category::kCpuGpuPara, kFirstCollectiveTag};
    const std::int64_t exchanges = iterations / trainer.hyper().period;
    if (trainer.is_master()) {
      float* centre = trainer.parameters();
      for (std::int64_t e = 0; e < exchanges; ++e) {
        if (serial_) {
          serve_in_turns(trainer, centre, options);
          continue;
        }
        // The reply is the centre itself, sent before each worker's move (the gather replies, then calls back).
        round_robin_gather(
            trainer.comm(), trainer.master(), {centre, n}, /*reply=*/true,
            [&](int, std::span<const float> worker) { pull_centre(trainer, centre, worker.data()); }, options);
      }
      return;
    }
    for (std::int64_t i = 0; i < iterations; ++i) {
      if (serial_ && (trainer.iterations() % trainer.hyper().period) == 0) {
        char turn = 0;
        trainer.comm().recv(trainer.master(), kTurnTag, &turn, 1, Category::kWait);
      }
      trainer.compute_gradient();
      trainer.sgd_step(*sgd_);
      if ((trainer.iterations() % trainer.hyper().period) != 0) continue;
      // A worker's half of the gather with a reply is a push and a pull: the weights go from where they live,
      // the centre comes back into buffer_.
      parameter_server_exchange(trainer.comm(), trainer.master(), trainer.parameter_floats(), {buffer_.data(), n},
                                options);
      elastic_move(trainer, trainer.parameters(), buffer_.data(), Category::kGpuUpdate);
    }
  }

 private:
  // Original EASGD*: one worker at a time computes its period and exchanges, in rank order.
  void serve_in_turns(Trainer& trainer, float* centre, const CollectiveOptions& options) {
    const std::size_t n = trainer.parameter_count();
    for (int w = 0; w < trainer.workers(); ++w) {
      const int worker = trainer.worker_rank(w);
      const char turn = 1;
      trainer.comm().send(worker, kTurnTag, &turn, 1, Category::kWait);
      trainer.comm().recv(worker, options.tag, buffer_.data(), n * sizeof(float), options.category);
      // The reply is the centre before the move: send it first, then move it.
      trainer.comm().send(worker, options.tag, centre, n * sizeof(float), options.category);
      pull_centre(trainer, centre, buffer_.data());
    }
  }

  bool serial_;
  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<float> buffer_;
};

}  // namespace

std::vector<AlgorithmEntry> original_easgd_entries() {
  return {{{"original-easgd", "the master exchanges with one worker at a time, in rank order (Algorithm 1)",
            /*has_master=*/true, /*synchronous=*/true},
           [](Trainer& trainer) { return std::make_unique<OriginalEasgd>(trainer, /*serial=*/false); }},
          {{"original-easgd-serial",
            "seed 000's Original EASGD*: original-easgd with one worker computing at a time (no overlap)",
            /*has_master=*/true, /*synchronous=*/true},
           [](Trainer& trainer) { return std::make_unique<OriginalEasgd>(trainer, /*serial=*/true); }}};
}

}  // namespace dsgd::algorithms
