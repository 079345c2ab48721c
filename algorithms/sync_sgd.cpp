// Sync SGD: every iteration each worker computes a gradient on its batch, the gradients are summed by an allreduce
// among the workers (gpu-gpu para) and averaged, and every worker applies the same momentum update -- the replicas
// stay bit-identical. No master. With a period > 1 the workers take `period` local steps between allreduces of
// their weights instead (local SGD / model averaging).

#include "algorithms/entries.hpp"
#include "algorithms/trainer.hpp"

namespace dsgd::algorithms {

namespace {

class SyncSgd final : public Algorithm {
 public:
  explicit SyncSgd(Trainer& trainer) : sgd_(trainer.make_sgd(trainer.hyper().momentum)) {}

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    const float scale = 1.0F / static_cast<float>(trainer.workers());
    for (std::int64_t i = 0; i < iterations; ++i) {
      trainer.compute_gradient();
      if (trainer.hyper().period == 1) {
        trainer.allreduce_weights(trainer.gradients(), AllreduceAlgorithm::kRing, Category::kGpuGpuPara);
        trainer.scale(trainer.gradients(), scale);
        trainer.sgd_step(*sgd_);
        continue;
      }
      trainer.sgd_step(*sgd_);
      if ((trainer.iterations() % trainer.hyper().period) == 0) {
        trainer.allreduce_weights(trainer.parameters(), AllreduceAlgorithm::kRing, Category::kGpuGpuPara);
        trainer.scale(trainer.parameters(), scale);
      }
    }
  }

 private:
  std::unique_ptr<nn::Sgd> sgd_;
};

}  // namespace

// A-BSP (seed 004, after Cui et al. 2014): BSP whose clock is --period iterations -- local steps, then one barrier
// that averages the replicas. That is Sync SGD's local-SGD mode, under the name the survey compares with SSP; at
// --period 1 it is BSP itself (Sync SGD). Its parameter-server form is ssp-sgd --staleness-bound 0 --period n.
AlgorithmEntry a_bsp_sgd_entry() {
  return {{"a-bsp-sgd", "A-BSP: --period local steps per clock, then the replicas averaged by a ring allreduce",
           /*has_master=*/false, /*synchronous=*/true},
          [](Trainer& trainer) { return std::make_unique<SyncSgd>(trainer); }};
}

AlgorithmEntry sync_sgd_entry() {
  return {{"sync-sgd", "gradients summed by a ring allreduce every iteration, same update everywhere",
           /*has_master=*/false, /*synchronous=*/true},
          [](Trainer& trainer) { return std::make_unique<SyncSgd>(trainer); }};
}

}  // namespace dsgd::algorithms
