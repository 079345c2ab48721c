// Multi-model Hogwild (seed 003 Algorithm 5): k binary tasks on the same samples (one label per task), k models
// trained at once. Batching stops paying off here -- k dense models may not fit in cache -- so it is Hogwild over
// samples, with the models side by side: W is stored row-major, features x stride, the k weights of a feature
// contiguous and padded so a 64-byte line never holds parts of two features (ModelLayout). A sample then touches
// one line per non-zero for all its models, and the arithmetic across models is SIMD (`omp simd`). The model's
// memory accesses stay scalar relaxed atomics (C++ has no vector atomics), moved through a small private row.

#include <algorithm>
#include <bit>
#include <string>

#include "algorithms/shared_memory/entries.hpp"
#include "algorithms/shared_memory/kernels.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

// Samples per dynamic deal, as Hogwild's.
constexpr std::size_t kSamplesPerDeal = 64;

std::size_t padded_stride(int models) {
  const auto k = static_cast<std::size_t>(models);
  return k <= 16 ? std::bit_ceil(k) : (k + 15) / 16 * 16;
}

class MultiModelHogwild final : public Method {
 public:
  explicit MultiModelHogwild(const MethodOptions& options)
      : options_(options),
        threads_(detail::resolve_threads(options)),
        layout_{options.models, padded_stride(options.models)} {}

  void prepare(const linear::Problem& problem) override {
    DSGD_ENFORCE(problem.data != nullptr, "the problem has no data");
    data_ = problem.data;
    if (options_.task_labels &&
        options_.task_labels->size() != data_->rows() * static_cast<std::size_t>(layout_.models)) {
      throw InputError("multi-model-hogwild: " + std::to_string(options_.task_labels->size()) + " task labels for " +
                       std::to_string(data_->rows()) + " rows x " + std::to_string(layout_.models) + " models of '" +
                       data_->name + "'");
    }
    l2_weights_ = detail::degree_l2_weights(*data_, problem.lambda);
    shrink_.assign(data_->features, 1.0F);
    // Per thread: the pending sample's coefficients, then one model row in flight.
    scratch_ = detail::PrivateBuffers(threads_, 2 * layout_.stride);
    pending_row_.assign(static_cast<std::size_t>(threads_), {});
    read_at_.assign(static_cast<std::size_t>(threads_), {});
  }

  void pass(std::span<float> model, float step, int pass, StalenessRecorder* staleness) override {
    DSGD_ENFORCE(data_ != nullptr, "prepare() before pass()");
    detail::check_recorder(staleness, threads_);
    DSGD_ENFORCE_EQ(model.size(), data_->features * layout_.stride);
    detail::proximal_shrink(l2_weights_, step, shrink_);
    const detail::PassOrder order(data_->rows(), options_.seed, pass, options_.shuffle);
    detail::with_flag(staleness != nullptr, [&](auto record) {
      Worker<decltype(record)::value> worker{{*this, order, model.data(), step, staleness, {}}};
      detail::run_units(worker, options_.schedule, order.size(), 1, threads_, kSamplesPerDeal);
    });
  }

  ModelLayout layout() const override { return layout_; }
  int threads() const override { return threads_; }
  StalenessBounds staleness_bounds() const override { return table1_staleness(SharingScheme::kHogwild, threads_, 1); }

 private:
  float label(std::size_t row, std::size_t m) const {
    return options_.task_labels ? (*options_.task_labels)[row * static_cast<std::size_t>(layout_.models) + m]
                                : data_->label[row];
  }

  template <bool kRecord>
  struct Worker : detail::UnitWorker<MultiModelHogwild> {
    // Margins of all models, then each model's step x d(loss)/d(margin) (0 in the padding).
    void sample(int thread, std::size_t position) {
      const data::SparseDataset& data = *method.data_;
      const std::size_t stride = method.layout_.stride;
      const auto models = static_cast<std::size_t>(method.layout_.models);
      float* coefficient = method.scratch_[thread].data();
      float* row_in_flight = coefficient + stride;
      detail::prefetch_ahead(data, order, position);
      const std::size_t row = order[position];
      method.pending_row_[static_cast<std::size_t>(thread)].value = row;
      if constexpr (kRecord) method.read_at_[static_cast<std::size_t>(thread)].value = clock.now();
      std::fill_n(coefficient, stride, 0.0F);
      const auto indices = data.row_index(row);
      const auto values = data.row_value(row);
      for (std::size_t k = 0; k < indices.size(); ++k) {
        float* weights = model + indices[k] * stride;
        for (std::size_t m = 0; m < stride; ++m) row_in_flight[m] = detail::load_relaxed(weights[m]);
        const float x = values[k];
#pragma omp simd
        for (std::size_t m = 0; m < stride; ++m) coefficient[m] += x * row_in_flight[m];
      }
      for (std::size_t m = 0; m < models; ++m) {
        coefficient[m] = step * detail::label_slope(coefficient[m], method.label(row, m));
      }
      std::fill(coefficient + models, coefficient + stride, 0.0F);
    }

    void write(int thread, std::size_t samples) {
      const data::SparseDataset& data = *method.data_;
      const std::size_t stride = method.layout_.stride;
      const float* coefficient = method.scratch_[thread].data();
      float* row_in_flight = method.scratch_[thread].data() + stride;
      const std::size_t row = method.pending_row_[static_cast<std::size_t>(thread)].value;
      const auto indices = data.row_index(row);
      const auto values = data.row_value(row);
      for (std::size_t k = 0; k < indices.size(); ++k) {
        float* weights = model + indices[k] * stride;
        const float x = values[k];
        const float shrink = method.shrink_[indices[k]];
        for (std::size_t m = 0; m < stride; ++m) row_in_flight[m] = detail::load_relaxed(weights[m]);
#pragma omp simd
        for (std::size_t m = 0; m < stride; ++m) row_in_flight[m] = (row_in_flight[m] - coefficient[m] * x) * shrink;
        for (std::size_t m = 0; m < stride; ++m) detail::store_relaxed(weights[m], row_in_flight[m]);
      }
      if constexpr (kRecord) {
        staleness->record(thread, clock.advance(samples) - method.read_at_[static_cast<std::size_t>(thread)].value - 1);
      }
    }
  };

  MethodOptions options_;
  int threads_;
  ModelLayout layout_;
  const data::SparseDataset* data_ = nullptr;
  std::vector<float> l2_weights_;
  std::vector<float> shrink_;
  detail::PrivateBuffers scratch_;
  std::vector<detail::PerThread<std::size_t>> pending_row_;
  std::vector<detail::PerThread<std::uint64_t>> read_at_;
};

}  // namespace

MethodEntry multi_model_hogwild_entry() {
  return detail::checked_entry<MultiModelHogwild>(
      {"multi-model-hogwild",
       "k models at once, Hogwild over samples, row-major features x models layout, SIMD across models (Algorithm 5)",
       BatchOption::kNone,
       /*parallel=*/true,
       /*multi_model=*/true,
       /*synchronous=*/false,
       {}});
}

}  // namespace dsgd::algorithms::shared_memory
