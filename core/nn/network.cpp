#include "core/nn/network.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/nn/random.hpp"

namespace dsgd::nn {
namespace {

// A model trains here when its layers form one chain: each reads the previous one, the first reads the input.
// Returns the first layer that breaks the chain, or null.
const LayerSpec* first_branch(const ModelSpec& model) {
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const LayerSpec& layer = model.layers[i];
    const bool chained =
        i == 0 ? layer.inputs.empty() : layer.inputs.size() == 1 && layer.inputs.front() == model.layers[i - 1].name;
    if (!chained) return &layer;
  }
  return nullptr;
}

std::vector<std::string> sequential_models() {
  std::vector<std::string> names;
  for (const std::string& name : model_names()) {
    if (first_branch(build_model(name)) == nullptr) names.push_back(name);
  }
  return names;
}

// Glorot & Bengio (2010) uniform bound sqrt(6 / (fan_in + fan_out)), with PyTorch's fans for grouped convolutions
// (fan_in = in / groups * kh * kw, fan_out = out * kh * kw).
float xavier_limit(const LayerSpec& layer) {
  double fan_in = 0;
  double fan_out = 0;
  if (layer.kind == LayerKind::kConvolution) {
    const double receptive = static_cast<double>(layer.kernel_h * layer.kernel_w);
    const std::int64_t in_per_group = layer.input.channels / layer.groups;
    fan_in = static_cast<double>(in_per_group) * receptive;
    fan_out = static_cast<double>(layer.output.channels) * receptive;
  } else {
    fan_in = static_cast<double>(layer.input.elements());
    fan_out = static_cast<double>(layer.output.elements());
  }
  return static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
}

}  // namespace

Network::Network(const ModelSpec& model, Backend& backend, int batch)
    : model_(model), backend_(backend), batch_(batch) {
  if (batch < 1) throw InputError("model '" + model.name + "': batch must be at least 1, got " + std::to_string(batch));
  if (model.layers.empty() || model.layers.back().kind != LayerKind::kSoftmax) {
    throw InputError("model '" + model.name + "' does not end in a softmax layer, which is the loss here");
  }
  if (const LayerSpec* branch = first_branch(model); branch != nullptr) {
    throw UnavailableError(
        "model '" + model.name + "' is not sequential (layer '" + branch->name + "' reads " +
        (branch->inputs.empty() ? std::string("the model input") : "'" + join(branch->inputs) + "'") +
        "); only sequential models train: " + join(sequential_models()));
  }
  if (!(model.layers.front().input == model.input)) {
    throw InputError("model '" + model.name + "': the first layer's input shape differs from the model's input");
  }

  // Every layer but the final softmax, whose place the loss takes.
  const std::size_t count = model.layers.size() - 1;
  if (count == 0 || model.layers[count - 1].output.elements() != model.classes) {
    throw InputError("model '" + model.name + "': the layer before the softmax does not output its " +
                     std::to_string(model.classes) + " classes");
  }
  layers_.reserve(count);
  layout_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const LayerSpec& spec = model.layers[i];
    layers_.push_back(backend.create_layer(spec, batch));
    layout_.push_back({spec.name, parameter_count_, layers_.back()->parameter_count()});
    parameter_count_ += layout_.back().count;
  }
  try {
    parameters_ = backend.allocate(parameter_count_);
    gradients_ = backend.allocate(parameter_count_);
    for (std::size_t i = 0; i < count; ++i) {
      const auto elements =
          static_cast<std::size_t>(batch) * static_cast<std::size_t>(model.layers[i].output.elements());
      activations_.push_back(backend.allocate(elements));
      activation_grads_.push_back(backend.allocate(elements));
    }
  } catch (...) {
    release_buffers();
    throw;
  }
}

Network::~Network() { release_buffers(); }

void Network::release_buffers() {
  for (float* buffer : activations_) backend_.release(buffer);
  for (float* buffer : activation_grads_) backend_.release(buffer);
  activations_.clear();
  activation_grads_.clear();
  backend_.release(parameters_);
  backend_.release(gradients_);
  parameters_ = nullptr;
  gradients_ = nullptr;
}

void Network::initialize(std::uint64_t seed) {
  // Written through a small host block, a layer's slice a block at a time: a host copy of all parameters would be
  // a fresh allocation faulted in page by page in every rank of a numeric simulation (docs/time-to-accuracy.md
  // "Cost"). The values depend only on the layer and the index within it.
  constexpr std::size_t kBlockFloats = std::size_t{1} << 14;
  std::vector<float> block(std::min(kBlockFloats, parameter_count_));
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const LayerSpec& spec = layers_[i]->spec();
    const std::size_t count = layout_[i].count;
    // Batch norm: scale 1, shift 0 (the identity until trained). Convolution and inner product: weights first,
    // uniform in the Xavier limit, biases (zero) after them. Anything else has no parameters to speak of: zero.
    std::size_t ones = 0, weights = 0;
    if (spec.kind == LayerKind::kBatchNorm) {
      ones = count / 2;
    } else if (spec.kind == LayerKind::kConvolution || spec.kind == LayerKind::kInnerProduct) {
      weights = spec.kind == LayerKind::kConvolution
                    ? static_cast<std::size_t>(spec.output.channels * (spec.input.channels / spec.groups) *
                                               spec.kernel_h * spec.kernel_w)
                    : static_cast<std::size_t>(spec.output.elements() * spec.input.elements());
    }
    const float limit = weights > 0 ? xavier_limit(spec) : 0.0f;
    // One stream per layer from the seed and the layer's name: a layer's weights do not depend on the layers
    // before it, and every back end gets the same bits.
    const std::uint64_t stream = mix64(seed) ^ name_hash(spec.name);
    for (std::size_t first = 0; first < count; first += block.size()) {
      const std::size_t n = std::min(block.size(), count - first);
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t j = first + k;
        block[k] = j < ones ? 1.0f : j < weights ? (2.0f * unit_float(random_bits(stream, j)) - 1.0f) * limit : 0.0f;
      }
      backend_.copy_to_device(parameters_ + layout_[i].offset + first, block.data(), n);
    }
  }
}

double Network::train_step(const float* images, const float* labels) { return train_step(images, labels, {}); }

double Network::train_step(const float* images, const float* labels, const LayerReady& on_layer_ready) {
  const double loss = forward_loss(images, labels);
  for (std::size_t i = layers_.size(); i-- > 0;) {
    backward_layer(i);
    if (on_layer_ready) on_layer_ready(i);
  }
  return loss;
}

double Network::forward_loss(const float* images, const float* labels) {
  forward_prefix(images, layers_.size());
  return loss(labels);
}

double Network::loss(const float* labels) {
  return backend_.softmax_cross_entropy(activations_.back(), labels, batch_, static_cast<int>(model_.classes),
                                        activation_grads_.back(), nullptr);
}

void Network::forward_layer(std::size_t i, const float* images) {
  DSGD_ENFORCE(i < layers_.size(), "forward_layer past the last layer");
  if (i == 0) images_ = images;
  layers_[i]->forward(i == 0 ? images : activations_[i - 1], activations_[i], parameters_ + layout_[i].offset, true);
}

const float* Network::forward_prefix(const float* images, std::size_t layers) {
  DSGD_ENFORCE(layers >= 1 && layers <= layers_.size(), "forward_prefix: no such layer count");
  for (std::size_t i = 0; i < layers; ++i) forward_layer(i, images);
  return activations_[layers - 1];
}

float* Network::output_gradient(std::size_t layer) {
  DSGD_ENFORCE(layer < layers_.size(), "output_gradient: no such layer");
  return activation_grads_[layer];
}

void Network::backward_layer(std::size_t i) {
  DSGD_ENFORCE(i < layers_.size() && images_ != nullptr, "backward_layer before forward_loss, or past the last layer");
  layers_[i]->backward(i == 0 ? images_ : activations_[i - 1], activations_[i], activation_grads_[i],
                       i == 0 ? nullptr : activation_grads_[i - 1], parameters_ + layout_[i].offset,
                       gradients_ + layout_[i].offset);
}

int Network::evaluate(const float* images, const float* labels, double* loss_sum) {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(i == 0 ? images : activations_[i - 1], activations_[i], parameters_ + layout_[i].offset, false);
  }
  int correct = 0;
  const double loss = backend_.softmax_cross_entropy(activations_.back(), labels, batch_,
                                                     static_cast<int>(model_.classes), nullptr, &correct);
  if (loss_sum != nullptr) *loss_sum += loss * batch_;
  return correct;
}

}  // namespace dsgd::nn
