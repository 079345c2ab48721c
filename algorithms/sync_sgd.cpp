// Sync SGD: every iteration each worker computes a gradient on its batch, the gradients are summed by an allreduce
// among the workers (gpu-gpu para) and averaged, and every worker applies the same momentum update -- the replicas
// stay bit-identical. No master. Hyperparameters::allreduce picks the allreduce (ring by default). With a period > 1
// the workers take `period` local steps between allreduces of their weights instead (local SGD / model averaging).
// --compression sends the gradients compressed (core/compressed_collectives.hpp): fp16 halves, or 1-bit / top-k
// messages with error feedback, whose residual each worker keeps here between iterations. The replicas stay
// bit-identical: every worker ends the exchange with the same floats.

#include "algorithms/entries.hpp"
#include "algorithms/trainer.hpp"
#include "core/compressed_collectives.hpp"

namespace dsgd::algorithms {

namespace {

class SyncSgd final : public Algorithm {
 public:
  explicit SyncSgd(Trainer& trainer) : sgd_(trainer.make_sgd(trainer.hyper().momentum)) {
    const Hyperparameters& hyper = trainer.hyper();
    compression_.kind = hyper.compression;
    compression_.topk_ratio = hyper.topk_ratio;
    if (compression_.kind == Compression::kNone) return;
    if (hyper.period != 1 || hyper.per_layer) {
      throw InputError(
          "sync-sgd: --compression compresses the gradients of every iteration: it needs --period 1 "
          "and one packed message (no --per-layer)");
    }
    // 1-bit scales per layer, as Seide et al. quantise each weight matrix on its own.
    for (const auto& slice : trainer.layout()) {
      if (slice.count > 0) compression_.segments.push_back(slice.count);
    }
    if (compression_.kind != Compression::kFp16) residual_ = trainer.model_vector();
  }

  void visit_state(Trainer&, StateVisitor& state) override {
    state.optimiser("sgd", *sgd_);
    if (!residual_.empty()) state.floats("residual", residual_);
  }

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    const float scale = 1.0F / static_cast<float>(trainer.workers());
    for (std::int64_t i = 0; i < iterations; ++i) {
      trainer.compute_gradient();
      if (trainer.hyper().period == 1) {
        exchange_gradients(trainer);
        trainer.scale(trainer.gradients(), scale);
        trainer.sgd_step(*sgd_);
        continue;
      }
      trainer.sgd_step(*sgd_);
      if ((trainer.iterations() % trainer.hyper().period) == 0) {
        trainer.allreduce_weights(trainer.parameters(), trainer.hyper().allreduce, Category::kGpuGpuPara);
        trainer.scale(trainer.parameters(), scale);
      }
    }
  }

 private:
  void exchange_gradients(Trainer& trainer) {
    if (compression_.kind == Compression::kNone) {
      trainer.allreduce_weights(trainer.gradients(), trainer.hyper().allreduce, Category::kGpuGpuPara);
      return;
    }
    const Floats residual{residual_.empty() ? nullptr : residual_.data(), trainer.parameter_count()};
    compressed_allreduce(trainer.comm(), trainer.gradient_floats(), residual, compression_,
                         {Category::kGpuGpuPara, kFirstCollectiveTag});
  }

  std::unique_ptr<nn::Sgd> sgd_;
  CompressionOptions compression_;
  std::vector<float> residual_;  // error feedback of onebit and topk (unused otherwise); empty in a size-only world
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
  return {{"sync-sgd", "gradients summed by an allreduce (--allreduce, ring) every iteration, same update everywhere",
           /*has_master=*/false, /*synchronous=*/true, /*shardable=*/false, /*compresses=*/true},
          [](Trainer& trainer) { return std::make_unique<SyncSgd>(trainer); }};
}

}  // namespace dsgd::algorithms
