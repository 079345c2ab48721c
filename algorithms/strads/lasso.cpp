#include "algorithms/strads/lasso.hpp"

#include <cmath>
#include <memory>

#include "core/collectives.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::strads {

namespace {

class LassoProgram final : public SchmpProgram {
 public:
  LassoProgram(Comm& comm, const LassoProblem& problem, const LassoRunOptions& options)
      : lambda_(options.lambda),
        capacity_(options.scheduler.kind == SchedulerKind::kSerial ? 1 : options.scheduler.coordinates),
        beta_(problem.features, 0.0) {
    const Shard rows = shard_of(problem.rows, comm.size(), comm.rank());
    shard_ = row_shard(problem, rows.offset, rows.offset + rows.count);
    residual_.assign(shard_.y.begin(), shard_.y.end());
    // |x_a^p|^2 of every column over this shard: fixed, so summed once rather than every time a is scheduled.
    squares_.resize(problem.features);
    for (std::size_t a = 0; a < problem.features; ++a) {
      double sum = 0;
      for (const float v : shard_.column_values(a)) sum += static_cast<double>(v) * v;
      squares_[a] = sum;
    }
    if (comm.rank() == 0) {
      scheduler_ = make_scheduler(problem, options.scheduler);
      // Before any update every coordinate is as promising as any other.
      change_.assign(problem.features, 1.0);
      updates_.assign(problem.features, 0);
    }
  }

  std::size_t max_set() const override { return capacity_; }

  std::vector<std::uint32_t> schedule(Comm& comm) override {
    // Two steps: the scheduling itself, costed natively by its wall time, then what it counted as a pure cost, which
    // a simulation charges (known only once it has run: the dynamic scheduler's cache decides how many correlations
    // it computes) and which natively takes no time.
    std::vector<std::uint32_t> set;
    comm.compute({.flops = 0, .kernel_class = "elementwise", .category = Category::kGpuUpdate, .kernel = [&] {
                    set = scheduler_->next(change_);
                  }});
    comm.compute({.flops = scheduler_->cost_flops(), .kernel_class = "elementwise", .category = Category::kGpuUpdate});
    return set;
  }

  void update(Comm& comm, std::span<const std::uint32_t> set, std::span<float> partial) override {
    comm.compute({.flops = 2.0 * static_cast<double>(nnz(set)),
                  .kernel_class = "elementwise",
                  .category = Category::kForwardBackward,
                  .kernel =
                      [&] {
                        for (std::size_t k = 0; k < set.size(); ++k) {
                          const auto rows = shard_.column_rows(set[k]);
                          const auto values = shard_.column_values(set[k]);
                          double dot = 0;
                          for (std::size_t j = 0; j < rows.size(); ++j) {
                            dot += static_cast<double>(values[j]) * residual_[rows[j]];
                          }
                          partial[k] = static_cast<float>(dot + squares_[set[k]] * beta_[set[k]]);
                        }
                      },
                  .bytes = 16.0 * static_cast<double>(nnz(set))});
  }

  void aggregate(Comm& comm, std::span<const std::uint32_t> set, std::span<const float> sums,
                 std::span<float> result) override {
    comm.compute({.flops = 4.0 * static_cast<double>(set.size()),
                  .kernel_class = "elementwise",
                  .category = Category::kGpuUpdate,
                  .kernel = [&] {
                    for (std::size_t k = 0; k < set.size(); ++k) {
                      const std::uint32_t a = set[k];
                      result[k] = static_cast<float>(soft_threshold(sums[k], lambda_));
                      change_[a] = std::abs(static_cast<double>(result[k]) - beta_[a]);
                      ++updates_[a];
                    }
                  }});
  }

  void commit(Comm& comm, std::span<const std::uint32_t> set, std::span<const float> result) override {
    comm.compute({.flops = 2.0 * static_cast<double>(nnz(set)),
                  .kernel_class = "elementwise",
                  .category = Category::kGpuUpdate,
                  .kernel =
                      [&] {
                        for (std::size_t k = 0; k < set.size(); ++k) {
                          const std::uint32_t a = set[k];
                          const double delta = static_cast<double>(result[k]) - beta_[a];
                          if (delta == 0) continue;
                          beta_[a] = result[k];
                          const auto rows = shard_.column_rows(a);
                          const auto values = shard_.column_values(a);
                          for (std::size_t j = 0; j < rows.size(); ++j) residual_[rows[j]] -= delta * values[j];
                        }
                      },
                  .bytes = 16.0 * static_cast<double>(nnz(set))});
  }

  double local_objective() const override {
    double squares = 0;
    for (const double r : residual_) squares += r * r;
    return 0.5 * squares;
  }

  double objective(double summed_shares) const override {
    double l1 = 0;
    for (const double b : beta_) l1 += std::abs(b);
    return summed_shares + lambda_ * l1;
  }

  std::vector<double> beta() const { return beta_; }
  std::vector<std::uint64_t> updates() const { return updates_; }

 private:
  std::uint64_t nnz(std::span<const std::uint32_t> set) const {
    std::uint64_t count = 0;
    for (const std::uint32_t a : set) count += shard_.column_begin[a + 1] - shard_.column_begin[a];
    return count;
  }

  double lambda_;
  std::size_t capacity_;
  LassoProblem shard_;
  std::vector<double> residual_;  // y - X beta over this worker's rows
  std::vector<double> squares_;   // |x_a^p|^2 over this worker's rows, by column
  std::vector<double> beta_;      // every worker's copy, equal on all after each commit
  // Rank 0 only.
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<double> change_;  // |delta beta| of each coordinate's last update
  std::vector<std::uint64_t> updates_;
};

}  // namespace

LassoRunResult run_lasso(Comm& comm, const LassoProblem& problem, const LassoRunOptions& options) {
  if (!(options.lambda >= 0) || !std::isfinite(options.lambda)) {
    throw InputError("lasso: lambda must be a finite number >= 0, got " + std::to_string(options.lambda));
  }
  LassoProgram program(comm, problem, options);
  LassoRunResult result;
  result.run = run_schmp(comm, program, options.schmp);
  if (comm.rank() == 0) {
    result.beta = program.beta();
    result.updates = program.updates();
  }
  return result;
}

}  // namespace dsgd::algorithms::strads
