// Sync SGD: every iteration each worker computes a gradient on its batch, the gradients are summed by an allreduce
// among the workers (gpu-gpu para) and averaged, and every worker applies the same momentum update -- the replicas
// stay bit-identical. No master. Hyperparameters::allreduce picks the allreduce (ring by default). With a period > 1
// the workers take `period` local steps between allreduces of their weights instead (local SGD / model averaging).

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
        trainer.allreduce_weights(trainer.gradients(), trainer.hyper().allreduce, Category::kGpuGpuPara);
        scale_by(trainer, trainer.gradients(), scale);
        trainer.sgd_step(*sgd_);
        continue;
      }
      trainer.sgd_step(*sgd_);
      if ((trainer.iterations() % trainer.hyper().period) == 0) {
        trainer.allreduce_weights(trainer.parameters(), trainer.hyper().allreduce, Category::kGpuGpuPara);
        scale_by(trainer, trainer.parameters(), scale);
      }
    }
  }

 private:
  static void scale_by(Trainer& trainer, float* data, float scale) {
    const std::size_t n = trainer.parameter_count();
    trainer.elementwise(static_cast<double>(n), Category::kGpuUpdate, [data, n, scale] {
      for (std::size_t i = 0; i < n; ++i) data[i] *= scale;
    });
  }

  std::unique_ptr<nn::Sgd> sgd_;
};

}  // namespace

AlgorithmEntry sync_sgd_entry() {
  return {{"sync-sgd", "gradients summed by an allreduce (--allreduce, ring) every iteration, same update everywhere",
           /*has_master=*/false, /*synchronous=*/true},
          [](Trainer& trainer) { return std::make_unique<SyncSgd>(trainer); }};
}

}  // namespace dsgd::algorithms
