// Sync EASGD with seed 000's co-design steps (Algorithms 2-4). Every period all workers exchange at once: a tree
// reduction sums their weights, the centre moves, W~ += alpha (sum_i W_i - P W~), a broadcast returns it, and every
// worker moves back, W_i -= alpha (W_i - W~). Deterministic: same seed, same weights, on any executor.
//   sync-easgd1  the centre on the master (the host CPU, rank 0): reduce and broadcast go through it (cpu-gpu para)
//   sync-easgd2  the centre on worker 0's device ("GPU 1"), no master: worker-to-worker traffic only (gpu-gpu para)
//   sync-easgd3  sync-easgd2, with the next batch's copy to the device overlapping the weight exchange

#include <algorithm>

#include "algorithms/entries.hpp"
#include "algorithms/parameter_server.hpp"

namespace dsgd::algorithms {

namespace {

enum class Variant { kMasterOnHost, kCentreOnWorker, kOverlappedCopy };

class SyncEasgd final : public Algorithm {
 public:
  SyncEasgd(Trainer& trainer, Variant variant)
      : variant_(variant), sum_(trainer.model_vector()), centre_(trainer.model_vector()) {
    if (!trainer.is_master()) sgd_ = trainer.make_sgd(0.0F);
    // The centre starts at the common initial weights.
    trainer.on_data([&] { std::copy_n(trainer.parameters(), trainer.parameter_count(), centre_.begin()); });
  }

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    const std::int64_t exchanges = iterations / trainer.hyper().period;
    if (trainer.is_master()) {
      for (std::int64_t e = 0; e < exchanges; ++e) exchange(trainer);
      return;
    }
    for (std::int64_t i = 0; i < iterations; ++i) {
      trainer.compute_gradient();
      trainer.sgd_step(*sgd_);
      if ((trainer.iterations() % trainer.hyper().period) != 0) continue;
      // EASGD3: copy the next batch to the device while the weights travel.
      if (variant_ == Variant::kOverlappedCopy) trainer.prefetch_batch();
      exchange(trainer);
    }
  }

  // sum_ is scratch; a copy of the centre off rank 0 is overwritten by the next broadcast, but saved all the same.
  void visit_state(Trainer&, StateVisitor& state) override {
    if (sgd_) state.optimiser("sgd", *sgd_);
    state.floats("centre", centre_);
  }

  void model_of_record(Trainer&, std::span<float> parameters) override {
    std::copy_n(centre_.begin(), parameters.size(), parameters.begin());
  }

 private:
  // One synchronous elastic exchange; the holder of the centre is rank 0 (the master, or worker 0).
  void exchange(Trainer& trainer) {
    const std::size_t n = trainer.parameter_count();
    const Category traffic = variant_ == Variant::kMasterOnHost ? Category::kCpuGpuPara : Category::kGpuGpuPara;
    const Category centre_update = variant_ == Variant::kMasterOnHost ? Category::kCpuUpdate : Category::kGpuUpdate;
    const bool holder = trainer.comm().rank() == 0;
    float* sum = sum_.data();
    // The master adds nothing to the sum; a worker adds its weights.
    trainer.on_data([&] {
      if (trainer.is_master()) {
        std::fill(sum_.begin(), sum_.end(), 0.0F);
      } else {
        std::copy_n(trainer.parameters(), n, sum);
      }
    });
    trainer.reduce_weights(sum, 0, traffic);
    float* centre = centre_.data();
    if (holder) {
      const float alpha = trainer.elastic_alpha();
      const auto workers = static_cast<float>(trainer.workers());
      trainer.elementwise(3.0 * static_cast<double>(n), centre_update, [=] {
        for (std::size_t k = 0; k < n; ++k) centre[k] += alpha * (sum[k] - workers * centre[k]);
      });
    }
    trainer.broadcast_weights(centre, 0, traffic);
    if (!trainer.is_master()) elastic_move(trainer, trainer.parameters(), centre, Category::kGpuUpdate);
  }

  Variant variant_;
  std::unique_ptr<nn::Sgd> sgd_;
  std::vector<float> sum_;
  std::vector<float> centre_;  // the centre (rank 0) or its latest copy (the others)
};

}  // namespace

std::vector<AlgorithmEntry> sync_easgd_entries() {
  return {
      {{"sync-easgd1", "synchronous EASGD, centre on the master (host CPU), tree reduce + broadcast (Algorithm 2)",
        /*has_master=*/true, /*synchronous=*/true},
       [](Trainer& trainer) { return std::make_unique<SyncEasgd>(trainer, Variant::kMasterOnHost); }},
      {{"sync-easgd2", "sync-easgd1 with the centre on worker 0's device: no host traffic (Algorithm 3)",
        /*has_master=*/false, /*synchronous=*/true},
       [](Trainer& trainer) { return std::make_unique<SyncEasgd>(trainer, Variant::kCentreOnWorker); }},
      {{"sync-easgd3", "sync-easgd2 with the next batch's copy overlapping the weight exchange (Algorithm 4)",
        /*has_master=*/false, /*synchronous=*/true},
       [](Trainer& trainer) { return std::make_unique<SyncEasgd>(trainer, Variant::kOverlappedCopy); }},
  };
}

}  // namespace dsgd::algorithms
