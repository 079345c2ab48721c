// Original EASGD (seed 000 Algorithm 1, Zhang et al. 2015): the master talks to one worker at a time in rank order.
// Every period a worker sends its weights W_i; the master replies with its centre W~ and moves it,
// W~ += alpha (W_i - W~); the worker moves back, W_i -= alpha (W_i - W~) (eqs. 1-2). The round robin serialises
// the workers: a fast worker waits for its turn.

#include <algorithm>

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

namespace {

class OriginalEasgd final : public Algorithm {
 public:
  explicit OriginalEasgd(Trainer& trainer) : buffer_(trainer.parameter_count()) {
    if (!trainer.is_master()) sgd_ = trainer.make_sgd(0.0F);
  }

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    const std::size_t n = trainer.parameter_count();
    const CollectiveOptions options{Category::kCpuGpuPara, kFirstCollectiveTag};
    const std::int64_t exchanges = iterations / trainer.hyper().period;
    if (trainer.is_master()) {
      float* centre = trainer.parameters();
      for (std::int64_t e = 0; e < exchanges; ++e) {
        // buffer_ is the reply: the centre before each worker's move.
        round_robin_gather(trainer.comm(), trainer.master(), {buffer_.data(), n}, /*reply=*/true,
                           [&](int, std::span<const float> worker) {
                             std::copy_n(centre, n, buffer_.begin());
                             const float alpha = trainer.elastic_alpha();
                             const float* w = worker.data();
                             trainer.elementwise(2.0 * static_cast<double>(n), Category::kCpuUpdate, [=] {
                               for (std::size_t k = 0; k < n; ++k) centre[k] += alpha * (w[k] - centre[k]);
                             });
                           },
                           options);
      }
      return;
    }
    for (std::int64_t i = 0; i < iterations; ++i) {
      trainer.compute_gradient();
      trainer.sgd_step(*sgd_);
      if ((trainer.iterations() % trainer.hyper().period) != 0) continue;
      std::copy_n(trainer.parameters(), n, buffer_.begin());  // sent, then overwritten by the centre
      round_robin_gather(trainer.comm(), trainer.master(), {buffer_.data(), n}, /*reply=*/true, {}, options);
      elastic_move(trainer, trainer.parameters(), buffer_.data(), Category::kGpuUpdate);
    }
  }

  void model_of_record(Trainer& trainer, std::span<float> parameters) override {
    std::copy_n(trainer.parameters(), parameters.size(), parameters.begin());  // the master's centre
  }

 private:
  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<float> buffer_;
};

}  // namespace

AlgorithmEntry original_easgd_entry() {
  return {{"original-easgd", "the master exchanges with one worker at a time, in rank order (Algorithm 1)",
           /*has_master=*/true, /*synchronous=*/true},
          [](Trainer& trainer) { return std::make_unique<OriginalEasgd>(trainer); }};
}

}  // namespace dsgd::algorithms
