#pragma once
// A sequential network of the model zoo on one back end, with all parameters -- and all gradients -- in one
// contiguous packed buffer each (seed 000 §5.2's single-layer layout): a worker can send its whole model in one
// message, or layer by layer through layout().

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"

namespace dsgd::nn {

// Where one layer's parameters sit in the packed buffer.
struct ParameterSlice {
  std::string layer;
  std::size_t offset = 0;
  std::size_t count = 0;
};

class Network {
 public:
  // Builds every layer of `model` for batches of `batch` on `backend` (which must outlive the network).
  // Throws UnavailableError for models with branches (only sequential ones train here: lenet, cifar10_alexnet,
  // alexnet, vgg16, vgg19), InputError for batch < 1. The last layer must be kSoftmax: it is the loss.
  Network(const ModelSpec& model, Backend& backend, int batch);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  const ModelSpec& model() const { return model_; }
  Backend& backend() const { return backend_; }
  int batch() const { return batch_; }
  std::size_t parameter_count() const { return parameter_count_; }
  const std::vector<ParameterSlice>& layout() const { return layout_; }

  // The packed buffers, in the back end's memory.
  float* parameters() { return parameters_; }
  float* gradients() { return gradients_; }

  // Xavier (Glorot) uniform weights, zero biases, from a seeded generator: the same seed gives bit-identical
  // parameters on every back end (generated on the host, then copied).
  void initialize(std::uint64_t seed);

  // Forward and backward on one batch already in the back end's memory (images: batch x input elements;
  // labels: batch floats holding class indices). Leaves dL/dparams in gradients() and returns the mean loss.
  double train_step(const float* images, const float* labels);

  // Called with a layer's index in layout() once that layer's parameter gradients are final.
  using LayerReady = std::function<void(std::size_t layer)>;
  // train_step, reporting each layer as soon as its backward pass ended, from the last layer to the first (every
  // layer, those without parameters too): the same gradients and loss, bit for bit.
  double train_step(const float* images, const float* labels, const LayerReady& on_layer_ready);

  // The same pass in steps, for a caller that times each layer: forward_loss() runs the forward pass, the loss and
  // its gradient, and returns the mean loss; then backward_layer(i) for i = layer_count() - 1 down to 0, each
  // leaving layer i's gradients final. `images` and `labels` must stay unchanged until backward_layer(0).
  double forward_loss(const float* images, const float* labels);
  void backward_layer(std::size_t layer);
  std::size_t layer_count() const { return layers_.size(); }
  // forward_loss() one layer at a time, for a caller that steps through each layer's forward pass (GeePS's
  // buffers moved between steps): forward_layer(i, images) for i = 0 .. layer_count() - 1, then loss(labels). The
  // same loss and gradients, bit for bit. `images` must stay unchanged until backward_layer(0).
  void forward_layer(std::size_t layer, const float* images);
  double loss(const float* labels);

  // The first `layers` layers alone, for a caller that runs the rest of the network itself (hybrid-sgd's
  // model-parallel head): forward_prefix() runs their forward pass (training mode) and returns their output (batch x
  // that layer's output elements); the caller writes dL/d(that output) into output_gradient(layers - 1) and calls
  // backward_layer(i) for i = layers - 1 down to 0. `images` must stay unchanged until backward_layer(0).
  const float* forward_prefix(const float* images, std::size_t layers);
  float* output_gradient(std::size_t layer);

  // Forward only (dropout off) on one batch; returns how many predictions equal the labels, and adds the summed
  // loss to *loss_sum when not null.
  int evaluate(const float* images, const float* labels, double* loss_sum = nullptr);

 private:
  void release_buffers();

  ModelSpec model_;
  Backend& backend_;
  int batch_;
  std::vector<std::unique_ptr<Layer>> layers_;  // without the final softmax, which is the loss
  std::vector<ParameterSlice> layout_;
  std::size_t parameter_count_ = 0;
  float* parameters_ = nullptr;
  float* gradients_ = nullptr;
  std::vector<float*> activations_;  // activations_[i] = output of layer i (input of i + 1)
  std::vector<float*> activation_grads_;
  const float* images_ = nullptr;  // forward_loss()'s batch, for backward_layer(0)
};

}  // namespace dsgd::nn
