// Mini-Batch SGD (seed 003 Algorithm 1): batches of S samples, each split statically across the T threads. Per
// batch, in two phases separated by barriers:
//   1. gradient: every thread sums step x gradient of its S/T samples into its private dense g, all computed at
//      the same model (which nobody writes in this phase, so plain reads are race-free);
//   2. reduction and update: every thread owns a 64-byte-aligned range of features, subtracts the T gradients
//      there in thread order, re-zeroes them and shrinks by the L2 proximal factor of S samples (dense update).
// The arithmetic depends only on the seed and T, never on timing, so the model is bit-identical run to run and
// between the OpenMP team and the lockstep schedule. Staleness: every sample misses the other S - 1 of its batch
// (Table I's S, counting the sample itself).

#include <algorithm>

#include "algorithms/shared_memory/entries.hpp"
#include "algorithms/shared_memory/kernels.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

class MiniBatch final : public Method {
 public:
  explicit MiniBatch(const MethodOptions& options)
      : options_(options),
        threads_(detail::resolve_threads(options)),
        batch_(static_cast<std::size_t>(options.batch)) {}

  void prepare(const linear::Problem& problem) override {
    DSGD_ENFORCE(problem.data != nullptr, "the problem has no data");
    data_ = problem.data;
    lambda_ = problem.lambda;
    gradients_ = detail::PrivateBuffers(threads_, data_->features);
  }

  void pass(std::span<float> model, float step, int pass, StalenessRecorder* staleness) override {
    DSGD_ENFORCE(data_ != nullptr, "prepare() before pass()");
    detail::check_recorder(staleness, threads_);
    DSGD_ENFORCE_EQ(model.size(), data_->features);
    const detail::PassOrder order(data_->rows(), options_.seed, pass, options_.shuffle);
    const std::size_t rows = order.size();
    detail::StalenessClock clock;
    if (options_.schedule == Schedule::kLockstep) {
      for (std::size_t begin = 0; begin < rows; begin += batch_) {
        const std::size_t size = std::min(batch_, rows - begin);
        const std::uint64_t read_at = clock.now();
        for (int t = 0; t < threads_; ++t) accumulate(t, order, begin, size, model, step);
        for (int t = 0; t < threads_; ++t) update(t, size, model, step);
        clock.advance(size);
        if (staleness != nullptr) {
          for (int t = 0; t < threads_; ++t) {
            if (!share(t, size).empty()) staleness->record(t, clock.now() - read_at - 1);
          }
        }
      }
      return;
    }
    // The shares and feature ranges belong to threads_ logical threads; should the runtime grant a smaller team (a
    // thread limit, nesting), each member takes every team-th of them, so the arithmetic is the same either way.
#pragma omp parallel num_threads(threads_)
    {
      const int team = omp_get_num_threads();
      const int me = omp_get_thread_num();
      std::uint64_t read_at = clock.now();
      for (std::size_t begin = 0; begin < rows; begin += batch_) {
        const std::size_t size = std::min(batch_, rows - begin);
        for (int t = me; t < threads_; t += team) accumulate(t, order, begin, size, model, step);
#pragma omp barrier
        for (int t = me; t < threads_; t += team) {
          update(t, size, model, step);
          if (staleness != nullptr) clock.advance(share(t, size).size());
        }
#pragma omp barrier
        // Every write of the batch has landed and no thread has started the next one: the clock stands still.
        if (staleness != nullptr) {
          const std::uint64_t now = clock.now();
          for (int t = me; t < threads_; t += team) {
            if (!share(t, size).empty()) staleness->record(t, now - read_at - 1);
          }
          read_at = now;
        }
      }
    }
  }

  int threads() const override { return threads_; }
  StalenessBounds staleness_bounds() const override {
    const StalenessBounds whole_unit = table1_staleness(SharingScheme::kMiniBatch, threads_, options_.batch);
    return {whole_unit.min - 1, whole_unit.max - 1};  // Table I counts the sample itself (staleness.hpp)
  }

 private:
  struct Range {
    std::size_t begin = 0, end = 0;
    bool empty() const { return begin == end; }
    std::size_t size() const { return end - begin; }
  };

  // Thread t's samples of a batch of `size`: a static, contiguous split.
  Range share(int t, std::size_t size) const {
    const auto threads = static_cast<std::size_t>(threads_);
    const auto thread = static_cast<std::size_t>(t);
    return {size * thread / threads, size * (thread + 1) / threads};
  }

  // Thread t's features in the update, cut at multiples of 16 floats so no two threads write one cache line.
  Range features(int t) const {
    const std::size_t lines = (data_->features + 15) / 16;
    const auto threads = static_cast<std::size_t>(threads_);
    const auto thread = static_cast<std::size_t>(t);
    return {std::min(data_->features, lines * thread / threads * 16),
            std::min(data_->features, lines * (thread + 1) / threads * 16)};
  }

  void accumulate(int t, const detail::PassOrder& order, std::size_t begin, std::size_t size, std::span<float> model,
                  float step) {
    const data::SparseDataset& data = *data_;
    float* g = gradients_[t].data();
    const Range mine = share(t, size);
    for (std::size_t position = begin + mine.begin; position < begin + mine.end; ++position) {
      detail::prefetch_ahead(data, order, position);
      const std::size_t row = order[position];
      const float coefficient = step * detail::label_slope(linear::dot_row(data, row, model), data.label[row]);
      const auto indices = data.row_index(row);
      const auto values = data.row_value(row);
      for (std::size_t k = 0; k < indices.size(); ++k) g[indices[k]] += coefficient * values[k];
    }
  }

  void update(int t, std::size_t size, std::span<float> model, float step) {
    const Range mine = features(t);
    float* m = model.data();
    for (int u = 0; u < threads_; ++u) {
      float* g = gradients_[u].data();
      for (std::size_t j = mine.begin; j < mine.end; ++j) {
        m[j] -= g[j];
        g[j] = 0;
      }
    }
    const float shrink = detail::dense_shrink(step, size, lambda_);
    for (std::size_t j = mine.begin; j < mine.end; ++j) m[j] *= shrink;
  }

  MethodOptions options_;
  int threads_;
  std::size_t batch_;
  const data::SparseDataset* data_ = nullptr;
  double lambda_ = 0;
  detail::PrivateBuffers gradients_;  // g per thread: step x the gradient of its share of the batch
};

}  // namespace

MethodEntry mini_batch_entry() {
  return detail::checked_entry<MiniBatch>(
      {"mini-batch",
       "batches of S split across threads, private gradients, synchronous reduction, dense update (Algorithm 1)",
       BatchOption::kBatch,
       /*parallel=*/true,
       /*multi_model=*/false,
       /*synchronous=*/true,
       {}});
}

}  // namespace dsgd::algorithms::shared_memory
