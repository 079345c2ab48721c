// HogBatch (seed 003 Algorithm 3): Hogwild over batches. Threads take batches of HS samples dynamically; a thread
// accumulates step x gradient of each sample of its batch in a private dense vector g, then subtracts g from the
// shared model feature by feature without synchronisation (relaxed atomics, as Hogwild) and re-zeroes g (the
// slides' loop forgets to). The model is written once per batch instead of once per sample, so cores exchange far
// fewer cache lines than under Hogwild, at the price of staleness [HS, T x HS] (Table I).
//
// hogbatch-local is the improved-staleness variant (Table II): a thread computes each gradient on model - g, the
// model as it will be once its own pending batch lands, so it sees its own earlier samples: [0, T x HS - HS].
// Seed 003 reports up to 30% faster convergence with it, mostly on denser problems.

#include <algorithm>

#include "algorithms/shared_memory/entries.hpp"
#include "algorithms/shared_memory/kernels.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

class HogBatch final : public Method {
 public:
  HogBatch(const MethodOptions& options, bool local_model)
      : options_(options),
        threads_(detail::resolve_threads(options)),
        hog_batch_(options.hog_batch > 0 ? options.hog_batch : std::max(1, options.batch / threads_)),
        local_model_(local_model) {}

  void prepare(const linear::Problem& problem) override {
    DSGD_ENFORCE(problem.data != nullptr, "the problem has no data");
    data_ = problem.data;
    lambda_ = problem.lambda;
    gradients_ = detail::PrivateBuffers(threads_, data_->features);
    read_at_.assign(static_cast<std::size_t>(threads_), {});
  }

  void pass(std::span<float> model, float step, int pass, StalenessRecorder* staleness) override {
    DSGD_ENFORCE(data_ != nullptr, "prepare() before pass()");
    detail::check_recorder(staleness, threads_);
    DSGD_ENFORCE_EQ(model.size(), data_->features);
    const detail::PassOrder order(data_->rows(), options_.seed, pass, options_.shuffle);
    detail::with_flag(staleness != nullptr, [&](auto record) {
      detail::with_flag(local_model_, [&](auto local) {
        using PassWorker = Worker<decltype(record)::value, decltype(local)::value>;
        PassWorker worker{{*this, order, model.data(), step, staleness, {}}};
        detail::run_units(worker, options_.schedule, order.size(), static_cast<std::size_t>(hog_batch_), threads_, 1);
      });
    });
  }

  int threads() const override { return threads_; }
  StalenessBounds staleness_bounds() const override {
    if (local_model_) return table2_staleness(SharingScheme::kHogBatch, threads_, hog_batch_);
    const StalenessBounds whole_unit = table1_staleness(SharingScheme::kHogBatch, threads_, hog_batch_);
    return {whole_unit.min - 1, whole_unit.max - 1};  // Table I counts the sample itself (staleness.hpp)
  }

 private:
  template <bool kRecord, bool kLocalModel>
  struct Worker : detail::UnitWorker<HogBatch> {
    // Accumulate step x gradient of one sample into the thread's g.
    void sample(int thread, std::size_t position) {
      const data::SparseDataset& data = *method.data_;
      float* g = method.gradients_[thread].data();
      detail::prefetch_ahead(data, order, position);
      const std::size_t row = order[position];
      if constexpr (kRecord) method.read_at_[static_cast<std::size_t>(thread)].value = clock.now();
      const auto indices = data.row_index(row);
      const auto values = data.row_value(row);
      float margin = 0;
      for (std::size_t k = 0; k < indices.size(); ++k) {
        const std::uint32_t j = indices[k];
        if constexpr (kLocalModel) {
          margin += values[k] * (detail::load_relaxed(model[j]) - g[j]);
        } else {
          margin += values[k] * detail::load_relaxed(model[j]);
        }
      }
      const float coefficient = step * detail::label_slope(margin, data.label[row]);
      for (std::size_t k = 0; k < indices.size(); ++k) g[indices[k]] += coefficient * values[k];
    }

    // The dense write of the batch: model <- (model - g) x the L2 shrink of its samples, then g <- 0.
    void write(int thread, std::size_t samples) {
      const std::size_t features = method.data_->features;
      const std::span<float> g = method.gradients_[thread];
      const float shrink = detail::dense_shrink(step, samples, method.lambda_);
      for (std::size_t j = 0; j < features; ++j) {
        detail::store_relaxed(model[j], (detail::load_relaxed(model[j]) - g[j]) * shrink);
      }
      std::fill_n(g.data(), features, 0.0F);
      if constexpr (kRecord) {
        const std::uint64_t own_seen = kLocalModel ? samples - 1 : 0;
        staleness->record(
            thread, clock.advance(samples) - method.read_at_[static_cast<std::size_t>(thread)].value - 1 - own_seen);
      }
    }
  };

  MethodOptions options_;
  int threads_;
  int hog_batch_;
  bool local_model_;
  const data::SparseDataset* data_ = nullptr;
  double lambda_ = 0;
  detail::PrivateBuffers gradients_;  // g per thread, step x the gradient summed over its pending batch
  std::vector<detail::PerThread<std::uint64_t>> read_at_;  // staleness clock before the latest sample's reads
};

}  // namespace

MethodEntry hogbatch_entry() {
  return detail::checked_entry<HogBatch>(
      {"hogbatch",
       "Hogwild over batches: private dense gradient per thread, written to the shared model per batch (Algorithm 3)",
       BatchOption::kHogBatch,
       /*parallel=*/true,
       /*multi_model=*/false,
       /*synchronous=*/false,
       {}},
      /*local_model=*/false);
}

MethodEntry hogbatch_local_entry() {
  return detail::checked_entry<HogBatch>(
      {"hogbatch-local",
       "HogBatch computing on model - own pending gradient (improved staleness, Table II)",
       BatchOption::kHogBatch,
       /*parallel=*/true,
       /*multi_model=*/false,
       /*synchronous=*/false,
       {}},
      /*local_model=*/true);
}

}  // namespace dsgd::algorithms::shared_memory
