#include "core/nn/sgd.hpp"

#include <cmath>
#include <string>

#include "core/enum_names.hpp"
#include "core/error.hpp"

namespace dsgd::nn {
namespace {

constexpr EnumNames<2> kLrScalingNames = {"none", "linear"};

void check(const SgdOptions& options, std::size_t count) {
  if (!(options.learning_rate > 0)) {
    throw InputError("SGD: learning rate must be > 0, got " + std::to_string(options.learning_rate));
  }
  if (!(options.momentum >= 0 && options.momentum < 1)) {
    throw InputError("SGD: momentum must be in [0, 1), got " + std::to_string(options.momentum));
  }
  if (!(options.weight_decay >= 0)) {
    throw InputError("SGD: weight decay must be >= 0, got " + std::to_string(options.weight_decay));
  }
  if (!(options.scaled_learning_rate >= 0) || !std::isfinite(options.scaled_learning_rate)) {
    throw InputError("SGD: scaled learning rate must be >= 0 (0: the base rate), got " +
                     std::to_string(options.scaled_learning_rate));
  }
  if (options.warmup_iterations < 0) {
    throw InputError("SGD: warm-up iterations must be >= 0, got " + std::to_string(options.warmup_iterations));
  }
  if (!(options.lars_trust > 0) || !std::isfinite(options.lars_trust)) {
    throw InputError("SGD: LARS trust coefficient must be > 0, got " + std::to_string(options.lars_trust));
  }
  if (!options.lars) return;
  std::size_t next = 0;
  for (const auto& slice : options.layout) {
    if (slice.offset != next) {
      throw InputError("SGD: LARS layer '" + slice.layer + "' starts at " + std::to_string(slice.offset) + ", not at " +
                       std::to_string(next) + ": the layout must cover the parameters in order");
    }
    next += slice.count;
  }
  if (!options.layout.empty() && next != count) {
    throw InputError("SGD: the LARS layout covers " + std::to_string(next) + " parameters, not the " +
                     std::to_string(count) + " of the buffer");
  }
}

}  // namespace

std::string_view lr_scaling_name(LrScaling scaling) { return name_of(scaling, kLrScalingNames); }

std::vector<std::string> lr_scaling_names() { return name_list(kLrScalingNames); }

LrScaling parse_lr_scaling(std::string_view name) { return from_name<LrScaling>("lr scaling", name, kLrScalingNames); }

float linearly_scaled_rate(float base, std::int64_t global_batch, std::int64_t reference_batch) {
  if (global_batch < 1 || reference_batch < 1) {
    throw InputError("linear lr scaling: batches must be >= 1, got global " + std::to_string(global_batch) +
                     " and reference " + std::to_string(reference_batch));
  }
  return static_cast<float>(static_cast<double>(base) * static_cast<double>(global_batch) /
                            static_cast<double>(reference_batch));
}

float scheduled_rate(const SgdOptions& options, std::int64_t step) {
  if (options.schedule) return options.schedule(step);
  const float target = options.scaled_learning_rate > 0 ? options.scaled_learning_rate : options.learning_rate;
  if (step >= options.warmup_iterations) return target;
  // In double, then rounded once: step 0 gives the base rate exactly.
  const double base = options.learning_rate;
  return static_cast<float>(base + (static_cast<double>(target) - base) * static_cast<double>(step) /
                                       static_cast<double>(options.warmup_iterations));
}

double lars_local_rate(double weight_norm, double gradient_norm, float trust, float weight_decay) {
  if (!(weight_norm > 0) || !(gradient_norm > 0)) return 1.0;
  return static_cast<double>(trust) * weight_norm / (gradient_norm + static_cast<double>(weight_decay) * weight_norm);
}

Sgd::Sgd(Backend& backend, std::size_t count, const SgdOptions& options)
    : backend_(backend), count_(count), options_(options) {
  check(options, count);
  if (options.momentum > 0) velocity_ = backend.allocate(count);
  if (options.lars) {
    lars_layers_ = options.layout;
    if (lars_layers_.empty()) lars_layers_.push_back({"all", 0, count});
    local_rates_.assign(lars_layers_.size(), 1.0);
  }
}

Sgd::~Sgd() { backend_.release(velocity_); }

void Sgd::update(float* parameters, const float* gradients, std::size_t offset, std::size_t count, float rate) {
  if (velocity_ == nullptr) {
    backend_.axpby(-rate, gradients + offset, 1.0f, parameters + offset, count);
    return;
  }
  backend_.axpby(-rate, gradients + offset, options_.momentum, velocity_ + offset, count);
  backend_.axpby(1.0f, velocity_ + offset, 1.0f, parameters + offset, count);
}

void Sgd::step(float* parameters, float* gradients) {
  const float rate = learning_rate();
  if (!(rate > 0) || !std::isfinite(rate)) {
    throw InputError("SGD: the learning-rate schedule gave " + std::to_string(rate) + " at step " +
                     std::to_string(steps_) + "; it must be finite and > 0");
  }
  // LARS's norms are of the raw gradient, before the decay term joins it (You et al. 2017, Algorithm 1).
  for (std::size_t l = 0; l < lars_layers_.size(); ++l) {
    const ParameterSlice& layer = lars_layers_[l];
    if (layer.count == 0) continue;
    const double weight_norm = std::sqrt(backend_.sum_of_squares(parameters + layer.offset, layer.count));
    const double gradient_norm = std::sqrt(backend_.sum_of_squares(gradients + layer.offset, layer.count));
    local_rates_[l] = lars_local_rate(weight_norm, gradient_norm, options_.lars_trust, options_.weight_decay);
  }
  if (options_.weight_decay > 0) backend_.axpby(options_.weight_decay, parameters, 1.0f, gradients, count_);
  if (lars_layers_.empty()) {
    update(parameters, gradients, 0, count_, rate);
  } else {
    for (std::size_t l = 0; l < lars_layers_.size(); ++l) {
      const ParameterSlice& layer = lars_layers_[l];
      if (layer.count == 0) continue;
      update(parameters, gradients, layer.offset, layer.count, static_cast<float>(rate * local_rates_[l]));
    }
  }
  ++steps_;
}

}  // namespace dsgd::nn
