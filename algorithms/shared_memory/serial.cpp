// Serial SGD (seed 003's baseline): one thread, one sample per update, a sparse update of the sample's features
// with its L2 term as a proximal shrink (method.hpp). Nothing is shared, so the model is accessed plainly and the
// staleness of every update is 0 by construction (recorded as such, so the tests and reports treat all methods
// alike).

#include "algorithms/shared_memory/entries.hpp"
#include "algorithms/shared_memory/kernels.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

class Serial final : public Method {
 public:
  explicit Serial(const MethodOptions& options) : options_(options) {}

  void prepare(const linear::Problem& problem) override {
    DSGD_ENFORCE(problem.data != nullptr, "the problem has no data");
    data_ = problem.data;
    l2_weights_ = detail::degree_l2_weights(*data_, problem.lambda);
    shrink_.assign(data_->features, 1.0F);
  }

  void pass(std::span<float> model, float step, int pass, StalenessRecorder* staleness) override {
    DSGD_ENFORCE(data_ != nullptr, "prepare() before pass()");
    detail::check_recorder(staleness, 1);
    DSGD_ENFORCE_EQ(model.size(), data_->features);
    detail::proximal_shrink(l2_weights_, step, shrink_);
    const detail::PassOrder order(data_->rows(), options_.seed, pass, options_.shuffle);
    for (std::size_t position = 0; position < order.size(); ++position) {
      detail::prefetch_ahead(*data_, order, position);
      const std::size_t row = order[position];
      const float coefficient = step * detail::label_slope(linear::dot_row(*data_, row, model), data_->label[row]);
      const auto indices = data_->row_index(row);
      const auto values = data_->row_value(row);
      for (std::size_t k = 0; k < indices.size(); ++k) {
        const std::uint32_t j = indices[k];
        model[j] = (model[j] - coefficient * values[k]) * shrink_[j];
      }
    }
    if (staleness != nullptr) {
      for (std::size_t i = 0; i < order.size(); ++i) staleness->record(0, 0);
    }
  }

  int threads() const override { return 1; }
  StalenessBounds staleness_bounds() const override { return table1_staleness(SharingScheme::kSerial, 1, 1); }

 private:
  MethodOptions options_;
  const data::SparseDataset* data_ = nullptr;
  std::vector<float> l2_weights_;
  std::vector<float> shrink_;
};

}  // namespace

MethodEntry serial_entry() {
  return detail::checked_entry<Serial>({"serial",
                                        "one thread, one sparse update per sample (seed 003's baseline)",
                                        BatchOption::kNone,
                                        /*parallel=*/false,
                                        /*multi_model=*/false,
                                        /*synchronous=*/true,
                                        {}});
}

}  // namespace dsgd::algorithms::shared_memory
