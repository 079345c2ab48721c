// Hogwild (seed 003 Algorithm 2, Niu et al. 2011): the threads take samples dynamically and each applies its
// sample's sparse update to the one shared model without locks. Reads and writes of the model are relaxed atomics,
// so an update may interleave with another thread's update of the same feature and lose part of it (the race seed
// 002 measures) but never tears a float or races in the C++ sense. Minimum staleness: an update misses only the
// updates other threads landed while it was being computed (Tables I-II: [0, T - 1] in lockstep).

#include "algorithms/shared_memory/entries.hpp"
#include "algorithms/shared_memory/kernels.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

// Samples per dynamic deal: one sample per deal would cost an atomic on OpenMP's loop counter per ~70 non-zeros.
constexpr std::size_t kSamplesPerDeal = 64;

class Hogwild final : public Method {
 public:
  explicit Hogwild(const MethodOptions& options) : options_(options), threads_(detail::resolve_threads(options)) {}

  void prepare(const linear::Problem& problem) override {
    DSGD_ENFORCE(problem.data != nullptr, "the problem has no data");
    data_ = problem.data;
    l2_weights_ = detail::degree_l2_weights(*data_, problem.lambda);
    shrink_.assign(data_->features, 1.0F);
    pending_.assign(static_cast<std::size_t>(threads_), {});
  }

  void pass(std::span<float> model, float step, int pass, StalenessRecorder* staleness) override {
    DSGD_ENFORCE(data_ != nullptr, "prepare() before pass()");
    detail::check_recorder(staleness, threads_);
    DSGD_ENFORCE_EQ(model.size(), data_->features);
    detail::proximal_shrink(l2_weights_, step, shrink_);
    const detail::PassOrder order(data_->rows(), options_.seed, pass, options_.shuffle);
    detail::with_flag(staleness != nullptr, [&](auto record) {
      Worker<decltype(record)::value> worker{{*this, order, model.data(), step, staleness, {}}};
      detail::run_units(worker, options_.schedule, order.size(), 1, threads_, kSamplesPerDeal);
    });
  }

  int threads() const override { return threads_; }
  StalenessBounds staleness_bounds() const override { return table1_staleness(SharingScheme::kHogwild, threads_, 1); }

 private:
  // A sample's update, split at the point where the lockstep schedule lets other threads write: sample() reads the
  // model and computes the gradient's scalar, write() applies the sparse update.
  struct Pending {
    std::size_t row = 0;
    float coefficient = 0;      // step x d(loss)/d(margin)
    std::uint64_t read_at = 0;  // staleness clock before the reads
  };

  template <bool kRecord>
  struct Worker : detail::UnitWorker<Hogwild> {
    void sample(int thread, std::size_t position) {
      Pending& pending = method.pending_[static_cast<std::size_t>(thread)].value;
      const data::SparseDataset& data = *method.data_;
      detail::prefetch_ahead(data, order, position);
      pending.row = order[position];
      if constexpr (kRecord) pending.read_at = clock.now();
      const auto indices = data.row_index(pending.row);
      const auto values = data.row_value(pending.row);
      float margin = 0;
      for (std::size_t k = 0; k < indices.size(); ++k) margin += values[k] * detail::load_relaxed(model[indices[k]]);
      pending.coefficient = step * detail::label_slope(margin, data.label[pending.row]);
    }

    void write(int thread, std::size_t samples) {
      const Pending& pending = method.pending_[static_cast<std::size_t>(thread)].value;
      const data::SparseDataset& data = *method.data_;
      const auto indices = data.row_index(pending.row);
      const auto values = data.row_value(pending.row);
      const float* shrink = method.shrink_.data();
      for (std::size_t k = 0; k < indices.size(); ++k) {
        float& cell = model[indices[k]];
        detail::store_relaxed(cell,
                              (detail::load_relaxed(cell) - pending.coefficient * values[k]) * shrink[indices[k]]);
      }
      if constexpr (kRecord) staleness->record(thread, clock.advance(samples) - pending.read_at - 1);
    }
  };

  MethodOptions options_;
  int threads_;
  const data::SparseDataset* data_ = nullptr;
  std::vector<float> l2_weights_;
  std::vector<float> shrink_;
  std::vector<detail::PerThread<Pending>> pending_;
};

}  // namespace

MethodEntry hogwild_entry() {
  return detail::checked_entry<Hogwild>(
      {"hogwild",
       "threads apply per-sample sparse updates to one shared model without locks (Algorithm 2)",
       BatchOption::kNone,
       /*parallel=*/true,
       /*multi_model=*/false,
       /*synchronous=*/false,
       {}});
}

}  // namespace dsgd::algorithms::shared_memory
