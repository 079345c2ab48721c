#pragma once
// Stochastic gradient descent on a network's packed buffers, on any back end (through Backend::axpby, so the
// update runs where the weights live):
//   plain      w <- w - eta (g + lambda w)
//   momentum   v <- mu v - eta (g + lambda w);  w <- w + v
// with learning rate eta, momentum mu and weight decay lambda (L2, Caffe's and PyTorch's convention).

#include <cstddef>

#include "core/nn/backend.hpp"

namespace dsgd::nn {

struct SgdOptions {
  float learning_rate = 0.01f;
  float momentum = 0.0f;      // 0: plain SGD, no velocity buffer
  float weight_decay = 0.0f;  // 0: none
};

class Sgd {
 public:
  // An optimiser for `count` parameters on `backend` (which must outlive it). Throws InputError for a learning
  // rate <= 0, a momentum outside [0, 1) or a negative weight decay.
  Sgd(Backend& backend, std::size_t count, const SgdOptions& options);
  ~Sgd();
  Sgd(const Sgd&) = delete;
  Sgd& operator=(const Sgd&) = delete;

  const SgdOptions& options() const { return options_; }
  // For schedules; the same checks as the constructor.
  void set_learning_rate(float learning_rate);

  // One update of `parameters` from `gradients` (both `count` floats in the back end's memory). With weight decay
  // the gradients are overwritten with g + lambda w.
  void step(float* parameters, float* gradients);

  // The momentum buffer (zero at first), or null for plain SGD: state an algorithm may reset or average.
  float* velocity() { return velocity_; }

 private:
  Backend& backend_;
  std::size_t count_;
  SgdOptions options_;
  float* velocity_ = nullptr;
};

}  // namespace dsgd::nn
