// Hogwild SGD: the workers share one weight vector and update it without locks (Niu et al. 2011). Each worker
// reads the shared weights, computes a gradient on its batch and adds its step back; concurrent additions may
// interleave element by element and lose updates, as on real hardware, but through Comm::shared_vector they are
// relaxed atomics (threads) or MPI one-sided operations, never a data race. With a period > 1 a worker takes local
// steps in between and adds their sum. No master.

#include <algorithm>

#include "algorithms/entries.hpp"
#include "algorithms/trainer.hpp"

namespace dsgd::algorithms {

namespace {

class HogwildSgd final : public Algorithm {
 public:
  explicit HogwildSgd(Trainer& trainer)
      : sgd_(trainer.make_sgd(0.0F)),
        read_(trainer.model_vector()),
        shared_(trainer.comm().shared_vector("hogwild-sgd weights", trainer.parameter_count(),
                                             {trainer.parameters(), trainer.parameter_count()})) {}

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    const std::size_t n = trainer.parameter_count();
    float* weights = trainer.parameters();
    for (std::int64_t i = 0; i < iterations; ++i) {
      if ((trainer.iterations() % trainer.hyper().period) == 0) {
        shared_->read(0, {weights, n}, Category::kCpuGpuPara);
        trainer.on_data([&] { std::copy_n(weights, n, read_.begin()); });
      }
      trainer.compute_gradient();
      trainer.sgd_step(*sgd_);
      if ((trainer.iterations() % trainer.hyper().period) != 0) continue;
      // The step since the read, added to the shared weights.
      float* delta = read_.data();
      trainer.elementwise(static_cast<double>(n), 12.0 * static_cast<double>(n), Category::kGpuUpdate, [=] {
        for (std::size_t k = 0; k < n; ++k) delta[k] = weights[k] - delta[k];
      });
      shared_->add(0, {delta, n}, 1.0F, Category::kCpuGpuPara);
    }
  }

  void model_of_record(Trainer&, std::span<float> parameters) override {
    shared_->read(0, parameters, Category::kWait);
  }

 private:
  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<float> read_;  // the weights as last read, then the step since
  std::shared_ptr<SharedVector> shared_;
};

}  // namespace

AlgorithmEntry hogwild_sgd_entry() {
  return {{"hogwild-sgd", "lock-free updates of one shared weight vector (Niu et al.)", /*has_master=*/false,
           /*synchronous=*/false},
          [](Trainer& trainer) { return std::make_unique<HogwildSgd>(trainer); }};
}

}  // namespace dsgd::algorithms
