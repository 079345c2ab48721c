#pragma once
// Stochastic gradient descent on a network's packed buffers, on any back end (through Backend::axpby, so the
// update runs where the weights live):
//   plain      w <- w - eta_t (g + lambda w)
//   momentum   v <- mu v - eta_t (g + lambda w);  w <- w + v
// with momentum mu and weight decay lambda (L2, Caffe's and PyTorch's convention). The rate eta_t of step t (the
// optimiser's own count, so a run repeats bit for bit on every executor) follows Goyal et al. 2017's gradual
// warm-up from the base rate to a scaled one, or any schedule. With LARS (You et al. 2017) every layer l steps at
// eta_t * trust ||w_l|| / (||g_l|| + lambda ||w_l||) instead. docs/nn.md "Optimizer options" has the formulas.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/nn/backend.hpp"
#include "core/nn/network.hpp"

namespace dsgd::nn {

struct SgdOptions {
  float learning_rate = 0.01f;  // eta: the base rate, step 0's (every step's without warm-up or scaling)
  float momentum = 0.0f;        // 0: plain SGD, no velocity buffer
  float weight_decay = 0.0f;    // 0: none
  // Gradual warm-up (Goyal et al. 2017 §2.2): eta_t = eta + (eta' - eta) t / W for t < W, then eta'. eta' is
  // usually the linearly scaled rate (linearly_scaled_rate); 0 means eta' = eta. W = 0: eta' from step 0.
  float scaled_learning_rate = 0.0f;   // eta'
  std::int64_t warmup_iterations = 0;  // W
  // Any other schedule: the rate of step t (from 0), in place of the three rates above. It must depend on t alone
  // (a run then repeats bit for bit) and return a finite rate > 0, or step() throws InputError.
  std::function<float(std::int64_t step)> schedule = {};
  // LARS (You et al. 2017): a local rate per layer of `layout` (Network::layout(): the slices must cover the buffer
  // in order; empty: the whole buffer is one layer), with the usual trust coefficient 0.001.
  bool lars = false;
  float lars_trust = 0.001f;
  std::vector<ParameterSlice> layout = {};
};

// How a run sets eta' from the base rate (Goyal et al. 2017's linear scaling rule, or none).
enum class LrScaling { kNone, kLinear };
// "none", "linear".
std::string_view lr_scaling_name(LrScaling scaling);
std::vector<std::string> lr_scaling_names();
// Throws UnknownNameError listing the names.
LrScaling parse_lr_scaling(std::string_view name);

// The linear scaling rule: base * global_batch / reference_batch (both batches >= 1, else InputError).
float linearly_scaled_rate(float base, std::int64_t global_batch, std::int64_t reference_batch);

// eta_t of `options` at `step` (from 0): the schedule's value, or the warm-up ramp. Not checked.
float scheduled_rate(const SgdOptions& options, std::int64_t step);

// LARS's local rate of a layer: trust * weight_norm / (gradient_norm + weight_decay * weight_norm), and 1 where
// either norm is 0 (a fresh zero layer, or a layer the loss does not reach, keeps the global rate), as TensorFlow's
// and PyTorch's LARS implementations guard it.
double lars_local_rate(double weight_norm, double gradient_norm, float trust, float weight_decay);

class Sgd {
 public:
  // An optimiser for `count` parameters on `backend` (which must outlive it). Throws InputError for a learning
  // rate <= 0, a momentum outside [0, 1), a negative weight decay or warm-up, a scaled rate < 0, a trust
  // coefficient <= 0, or a LARS layout that does not cover the `count` parameters in order.
  Sgd(Backend& backend, std::size_t count, const SgdOptions& options);
  ~Sgd();
  Sgd(const Sgd&) = delete;
  Sgd& operator=(const Sgd&) = delete;

  const SgdOptions& options() const { return options_; }
  // Steps taken so far, which the schedule counts.
  std::int64_t steps() const { return steps_; }
  // eta_t of the next step.
  float learning_rate() const { return scheduled_rate(options_, steps_); }
  // With LARS, the local rate of each layer of the layout at the last step (1 before the first); else empty.
  const std::vector<double>& local_rates() const { return local_rates_; }

  // One update of `parameters` from `gradients` (both `count` floats in the back end's memory), then counts the
  // step. With weight decay the gradients are overwritten with g + lambda w. Throws InputError when a schedule
  // returns a rate that is not finite and > 0.
  void step(float* parameters, float* gradients);

  // The momentum buffer (zero at first), or null for plain SGD: state an algorithm may reset or average.
  float* velocity() { return velocity_; }
  // The parameters it updates (and the floats of velocity()).
  std::size_t count() const { return count_; }
  // Resuming from a checkpoint: the schedule continues from step `steps`.
  void set_steps(std::int64_t steps) { steps_ = steps; }

 private:
  // w <- w - rate (g + lambda w) (or the momentum form) over `count` floats from `offset`; the decay is already in g.
  void update(float* parameters, const float* gradients, std::size_t offset, std::size_t count, float rate);

  Backend& backend_;
  std::size_t count_;
  SgdOptions options_;
  std::vector<ParameterSlice> lars_layers_;  // the layout, or the whole buffer as one layer
  std::vector<double> local_rates_;
  std::int64_t steps_ = 0;
  float* velocity_ = nullptr;
};

}  // namespace dsgd::nn
