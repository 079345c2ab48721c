// Hogwild EASGD: the EASGD centre lives in a vector shared by the workers and updated without locks. Each worker
// takes local SGD steps and every period reads the centre, moves toward it, W_i -= alpha (W_i - W~), and adds the
// opposite move to the centre, W~ += alpha (W_i - W~) (seed 000 eqs. 1-2 with no master to serialise them).
// Shared-vector additions are relaxed atomics (threads) or MPI one-sided operations: lossy, never racy.

#include <algorithm>

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

namespace {

class HogwildEasgd final : public Algorithm {
 public:
  explicit HogwildEasgd(Trainer& trainer)
      : sgd_(trainer.make_sgd(0.0F)),
        centre_(trainer.model_vector()),
        move_(trainer.model_vector()),
        shared_(trainer.comm().shared_vector("hogwild-easgd centre", trainer.parameter_count(),
                                             {trainer.parameters(), trainer.parameter_count()})) {}

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    const std::size_t n = trainer.parameter_count();
    for (std::int64_t i = 0; i < iterations; ++i) {
      trainer.compute_gradient();
      trainer.sgd_step(*sgd_);
      if ((trainer.iterations() % trainer.hyper().period) != 0) continue;
      shared_->read(0, centre_, Category::kCpuGpuPara);
      float* weights = trainer.parameters();
      const float* centre = centre_.data();
      float* move = move_.data();
      const float alpha = trainer.elastic_alpha();
      trainer.elementwise(3.0 * static_cast<double>(n), Category::kGpuUpdate, [=] {
        for (std::size_t k = 0; k < n; ++k) {
          move[k] = alpha * (weights[k] - centre[k]);
          weights[k] -= move[k];
        }
      });
      shared_->add(0, move_, 1.0F, Category::kCpuGpuPara);
    }
  }

  void model_of_record(Trainer&, std::span<float> parameters) override {
    shared_->read(0, parameters, Category::kWait);
  }

 private:
  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<float> centre_;
  std::vector<float> move_;
  std::shared_ptr<SharedVector> shared_;
};

}  // namespace

AlgorithmEntry hogwild_easgd_entry() {
  return {{"hogwild-easgd", "EASGD with the centre in lock-free shared memory, no master", /*has_master=*/false,
           /*synchronous=*/false},
          [](Trainer& trainer) { return std::make_unique<HogwildEasgd>(trainer); }};
}

}  // namespace dsgd::algorithms
