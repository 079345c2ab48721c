#include "core/nn/sgd.hpp"

#include <string>

#include "core/error.hpp"

namespace dsgd::nn {
namespace {

void check(const SgdOptions& options) {
  if (!(options.learning_rate > 0)) {
    throw InputError("SGD: learning rate must be > 0, got " + std::to_string(options.learning_rate));
  }
  if (!(options.momentum >= 0 && options.momentum < 1)) {
    throw InputError("SGD: momentum must be in [0, 1), got " + std::to_string(options.momentum));
  }
  if (!(options.weight_decay >= 0)) {
    throw InputError("SGD: weight decay must be >= 0, got " + std::to_string(options.weight_decay));
  }
}

}  // namespace

Sgd::Sgd(Backend& backend, std::size_t count, const SgdOptions& options)
    : backend_(backend), count_(count), options_(options) {
  check(options);
  if (options.momentum > 0) velocity_ = backend.allocate(count);
}

Sgd::~Sgd() { backend_.release(velocity_); }

void Sgd::set_learning_rate(float learning_rate) {
  SgdOptions next = options_;
  next.learning_rate = learning_rate;
  check(next);
  options_ = next;
}

void Sgd::step(float* parameters, float* gradients) {
  if (options_.weight_decay > 0) backend_.axpby(options_.weight_decay, parameters, 1.0f, gradients, count_);
  if (velocity_ == nullptr) {
    backend_.axpby(-options_.learning_rate, gradients, 1.0f, parameters, count_);
    return;
  }
  backend_.axpby(-options_.learning_rate, gradients, options_.momentum, velocity_, count_);
  backend_.axpby(1.0f, velocity_, 1.0f, parameters, count_);
}

}  // namespace dsgd::nn
