#include "algorithms/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace dsgd::algorithms {

namespace {

// Each worker draws its own batch order: the run's seed mixed with the worker's index (SplitMix64's constant), so
// workers see different batches and a run is reproducible.
std::uint64_t worker_seed(std::uint64_t seed, int worker_index) {
  return seed + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(worker_index + 1);
}

}  // namespace

Trainer::Trainer(Comm& comm, const AlgorithmInfo& info, const Hyperparameters& hyper, const TrainerSetup& setup)
    : comm_(comm), info_(info), hyper_(hyper), setup_(setup) {
  hyper_.own = resolve_options(info_, hyper.own);
  if (hyper_.servers < 1 || (hyper_.servers > 1 && !info_.shardable)) {
    throw InputError(info_.name + ": --servers " + std::to_string(hyper_.servers) +
                     (hyper_.servers < 1 ? " must be at least 1" : " needs an algorithm that takes --servers"));
  }
  if (workers() < 1) {
    throw InputError(info_.name + " needs at least one worker (" + std::to_string(comm_.size()) + " ranks given)");
  }
  DSGD_ENFORCE(setup_.model != nullptr, "a trainer needs its model");
  if (hyper_.batch >= 1) {
    const ModelSpec& model = *setup_.model;
    kernel_list_ = setup_.kernels
                       ? setup_.kernels
                       : std::make_shared<const std::vector<LayerKernel>>(iteration_kernels(model, hyper_.batch));
    kernels_ = *kernel_list_;
    // Backward kernels run last layer first, each layer's together.
    backward_range_.assign(model.layers.size(), {0, 0});
    for (std::size_t i = model.layers.size(); i < kernels_.size();) {
      const std::size_t layer = kernels_[i].layer;
      const std::size_t begin = i;
      while (i < kernels_.size() && kernels_[i].layer == layer) ++i;
      backward_range_[layer] = {begin, i};
    }
    // Weights, gradients and a momentum or server copy, and every activation with its gradient.
    resident_bytes_ = 3.0 * sizeof(float) * static_cast<double>(model.parameters()) +
                      2.0 * hyper_.batch * static_cast<double>(model.activation_bytes());
  }
  if (!has_data()) {
    // Sizes from the model description, as nn::Network lays them out.
    for (const auto& layer : setup_.model->layers) {
      const auto count = static_cast<std::size_t>(layer.parameters);
      layout_.push_back({layer.name, parameter_count_, count});
      parameter_count_ += count;
    }
    return;
  }
  comm_.set_up([this] { build_rank_data(); });  // side by side with the other ranks' in a numeric simulation
}

void Trainer::build_rank_data() {
  nn::BackendOptions options = cpu_options();
  if (setup_.backend != "cpu") {
    const int devices = nn::backend_device_count(setup_.backend);
    options.device = devices > 0 ? comm_.rank() % devices : 0;  // none: make_backend says so
    host_backend_ = nn::make_backend("cpu", cpu_options());
  }
  backend_ = nn::make_backend(setup_.backend, options);
  network_ = std::make_unique<nn::Network>(*setup_.model, *backend_, hyper_.batch);
  network_->initialize(hyper_.seed);  // the same weights on every rank
  parameter_count_ = network_->parameter_count();
  layout_ = network_->layout();
  if (host_backend_) {
    host_parameters_.resize(parameter_count_);
    host_gradients_.resize(parameter_count_);
    backend_->copy_to_host(host_parameters_.data(), network_->parameters(), parameter_count_);
    backend_->synchronize();
  }
  if (!is_master()) {
    DSGD_ENFORCE(setup_.train != nullptr, "a worker needs training data");
    sampler_ = std::make_unique<data::BatchSampler>(setup_.train->size(), static_cast<std::size_t>(hyper_.batch),
                                                    worker_seed(hyper_.seed, worker_index()));
    const auto batch = static_cast<std::size_t>(hyper_.batch);
    host_images_.resize(batch * setup_.train->image_size());
    host_labels_.resize(batch);
    images_ = backend_->allocate(host_images_.size());
    labels_ = backend_->allocate(host_labels_.size());
  }
}

nn::BackendOptions Trainer::cpu_options() const {
  nn::BackendOptions options;
  options.threads = setup_.threads_per_rank;
  options.seed = hyper_.seed;
  return options;
}

Trainer::~Trainer() {
  // A running copy writes into buffers released below; a deferred one (Comm::start_beside) never starts.
  if (prefetch_.valid() && prefetch_.wait_for(std::chrono::seconds(0)) != std::future_status::deferred) {
    prefetch_.wait();
  }
  if (images_ != nullptr) backend_->release(images_);
  if (labels_ != nullptr) backend_->release(labels_);
}

void Algorithm::model_of_record(Trainer& trainer, std::span<float> parameters) {
  std::copy_n(trainer.parameters(), parameters.size(), parameters.begin());
}

std::map<std::string, double> Algorithm::counters(Trainer&) const { return {}; }

void Algorithm::visit_state(Trainer& trainer, StateVisitor&) {
  throw InternalError(trainer.info().name + " does not name its state for a checkpoint");
}

nn::Network& Trainer::network() {
  DSGD_ENFORCE(network_ != nullptr, "a size-only world has no network");
  return *network_;
}

std::vector<float> Trainer::model_vector() const {
  return has_data() ? std::vector<float>(parameter_count_, 0.0F) : std::vector<float>{};
}

float Trainer::elastic_alpha() const {
  if (hyper_.elastic_rho > 0) return hyper_.learning_rate * hyper_.elastic_rho;
  return 0.9F / static_cast<float>(workers());
}

void Trainer::copy_batch() {
  DSGD_ENFORCE(!is_master(), "the master computes no gradients");
  ComputeStep copy;
  copy.kernel_class = "copy";
  copy.category = Category::kCpuGpuData;
  // The batch's images and labels as floats.
  copy.bytes =
      static_cast<double>(hyper_.batch) * static_cast<double>(setup_.model->input.elements() + 1) * sizeof(float);
  if (prefetch_.valid()) {
    copy.kernel = [this] { prefetch_.get(); };  // only the part the exchange did not hide
  } else {
    copy.kernel = [this] { load_batch(); };
  }
  copy.rank_local = true;  // this rank's sampler and buffers; the data set is only read
  comm_.compute(copy);
}

double Trainer::compute_gradient() {
  copy_batch();
  upload_parameters(parameter_count_);
  double loss = 0;
  // Backward costs about twice the forward pass.
  forward_backward(
      3.0 * setup_.model->forward_flops() * hyper_.batch,
      [this, &loss] {
        loss = network_->train_step(images_, labels_);
        backend_->synchronize();
      },
      kernels_);
  download_gradients(0, parameter_count_);
  finish_gradient(loss);
  return loss;
}

void Trainer::parameter_copy(std::size_t floats, const std::function<void()>& copy) {
  ComputeStep step;
  step.kernel_class = "copy";
  step.category = Category::kCpuGpuPara;
  step.bytes = static_cast<double>(floats) * sizeof(float);
  step.kernel = [this, &copy] {
    copy();
    backend_->synchronize();
  };
  comm_.compute(step);
}

void Trainer::upload_parameters(std::size_t count) {
  if (!host_backend_ || !has_data() || count == 0) return;
  parameter_copy(count,
                 [this, count] { backend_->copy_to_device(network_->parameters(), host_parameters_.data(), count); });
}

void Trainer::download_gradients(std::size_t offset, std::size_t count) {
  if (!host_backend_ || !has_data() || count == 0) return;
  parameter_copy(count, [this, offset, count] {
    backend_->copy_to_host(host_gradients_.data() + offset, network_->gradients() + offset, count);
  });
}

bool Trainer::ends_in_softmax() const {
  const auto& layers = setup_.model->layers;
  return !layers.empty() && layers.back().kind == LayerKind::kSoftmax;
}

std::size_t Trainer::network_layers() const { return setup_.model->layers.size() - (ends_in_softmax() ? 1 : 0); }

double Trainer::compute_gradient(const LayerReady& on_layer_ready) {
  copy_batch();
  upload_parameters(parameter_count_);
  const ModelSpec& model = *setup_.model;
  const double batch = hyper_.batch;
  // The final softmax's forward and backward FLOPs go with the forward step.
  const bool softmax_loss = ends_in_softmax();
  const std::size_t layers = network_layers();
  double loss = 0;
  // Every layer's forward, then the softmax's backward: the first kernels of the iteration.
  const std::size_t forward_kernels =
      model.layers.size() + (softmax_loss ? backward_kernels(model.layers.size() - 1).size() : 0);
  forward_backward(
      batch * (model.forward_flops() + (softmax_loss ? 2.0 * model.layers.back().forward_flops : 0.0)),
      [this, &loss] {
        loss = network_->forward_loss(images_, labels_);
        backend_->synchronize();
      },
      std::span(kernels_).first(std::min(forward_kernels, kernels_.size())));
  backward_layers(layers, on_layer_ready);
  finish_gradient(loss);
  return loss;
}

void Trainer::backward_layers(std::size_t layers, const LayerReady& on_layer_ready, const StepAround* around,
                              std::size_t first_step) {
  const double batch = hyper_.batch;
  std::size_t step = first_step;
  for (std::size_t layer = layers; layer-- > 0;) {
    const auto run = [&] {
      forward_backward(
          2.0 * batch * setup_.model->layers[layer].forward_flops,
          [this, layer] {
            network_->backward_layer(layer);
            backend_->synchronize();
          },
          backward_kernels(layer));
      if (has_data()) download_gradients(layout_[layer].offset, layout_[layer].count);
    };
    if (around != nullptr) {
      (*around)(step++, run);
    } else {
      run();
    }
    if (on_layer_ready) on_layer_ready(layer);
  }
}

double Trainer::compute_gradient(const StepAround& around, const LayerReady& on_layer_ready) {
  copy_batch();
  upload_parameters(parameter_count_);
  const ModelSpec& model = *setup_.model;
  const double batch = hyper_.batch;
  const bool softmax_loss = ends_in_softmax();
  const std::size_t layers = network_layers();
  std::size_t step = 0;
  for (std::size_t layer = 0; layer < layers; ++layer) {
    around(step++, [&] {
      forward_backward(
          batch * model.layers[layer].forward_flops,
          [this, layer] {
            network_->forward_layer(layer, images_);
            backend_->synchronize();
          },
          std::span(kernels_).subspan(std::min(layer, kernels_.size()), layer < kernels_.size() ? 1 : 0));
    });
  }
  double loss = 0;
  const auto loss_step = [&] {
    // The softmax's forward and backward kernels, side by side in kernels_.
    const std::size_t softmax = model.layers.size() - 1;
    const std::span<const LayerKernel> loss_kernels =
        softmax_loss && softmax < kernels_.size()
            ? std::span(kernels_).subspan(softmax, 1 + backward_kernels(softmax).size())
            : std::span<const LayerKernel>();
    forward_backward(
        softmax_loss ? 3.0 * batch * model.layers.back().forward_flops : 0.0,
        [this, &loss] {
          loss = network_->loss(labels_);
          backend_->synchronize();
        },
        loss_kernels);
  };
  if (softmax_loss) {
    around(step++, loss_step);
    around(step++, [] {});  // the softmax's backward pass: the loss step wrote its gradient
  } else {
    loss_step();
  }
  backward_layers(layers, on_layer_ready, &around, step);
  finish_gradient(loss);
  return loss;
}

const float* Trainer::forward_prefix(std::size_t layers) {
  const ModelSpec& model = *setup_.model;
  DSGD_ENFORCE(layers >= 1 && layers < model.layers.size(), "forward_prefix: no such layer count");
  prefix_layers_ = layers;
  copy_batch();
  upload_parameters(layout_[layers - 1].offset + layout_[layers - 1].count);
  double flops = 0;
  for (std::size_t i = 0; i < layers; ++i) flops += model.layers[i].forward_flops;
  const float* output = nullptr;
  forward_backward(
      hyper_.batch * flops,
      [this, layers, &output] {
        output = network_->forward_prefix(images_, layers);
        backend_->synchronize();
      },
      std::span(kernels_).first(std::min(layers, kernels_.size())));
  if (!has_data() || !host_backend_) return output;
  const auto count =
      static_cast<std::size_t>(hyper_.batch) * static_cast<std::size_t>(model.layers[layers - 1].output.elements());
  prefix_output_.resize(count);
  prefix_gradient_.resize(count);
  parameter_copy(count, [this, output, count] { backend_->copy_to_host(prefix_output_.data(), output, count); });
  return prefix_output_.data();
}

float* Trainer::prefix_output_gradient() {
  if (!has_data()) return nullptr;
  DSGD_ENFORCE(prefix_layers_ > 0, "prefix_output_gradient before forward_prefix");
  return host_backend_ ? prefix_gradient_.data() : network_->output_gradient(prefix_layers_ - 1);
}

void Trainer::backward_prefix(double loss, const LayerReady& on_layer_ready) {
  DSGD_ENFORCE(prefix_layers_ > 0, "backward_prefix before forward_prefix");
  if (has_data() && host_backend_) {
    parameter_copy(prefix_gradient_.size(), [this] {
      backend_->copy_to_device(network_->output_gradient(prefix_layers_ - 1), prefix_gradient_.data(),
                               prefix_gradient_.size());
    });
  }
  backward_layers(prefix_layers_, on_layer_ready);
  prefix_layers_ = 0;
  finish_gradient(loss);
}

void Trainer::forward_backward(double flops, std::function<void()> kernel, std::span<const LayerKernel> kernels) {
  ComputeStep step;
  step.flops = flops;
  step.kernel_class = "conv";
  step.category = Category::kForwardBackward;
  step.kernel = std::move(kernel);
  step.kernels = kernels;
  step.resident_bytes = resident_bytes_;
  step.rank_local = true;  // this rank's network, batch and back end only
  comm_.compute(step);
}

std::span<const LayerKernel> Trainer::backward_kernels(std::size_t layer) const {
  if (layer >= backward_range_.size()) return {};
  const auto [begin, end] = backward_range_[layer];
  return std::span(kernels_).subspan(begin, end - begin);
}

void Trainer::finish_gradient(double loss) {
  ++iterations_;
  if (comm_.has_payload()) {
    if (!std::isfinite(loss)) {
      throw DivergedError(info_.name + ": worker " + std::to_string(worker_index()) + "'s loss became " +
                          std::to_string(loss) + " at its iteration " + std::to_string(iterations_) +
                          " (diverged; lower the learning rate)");
    }
    loss_sum_ += loss;
    ++loss_count_;
  }
}

double overlapped_comm_s(const StreamResult& joined) {
  double comm_s = 0;
  for (std::size_t i = 0; i < joined.stream.seconds.size(); ++i) {
    if (is_communication(static_cast<Category>(i))) comm_s += joined.stream.seconds[i];
  }
  return std::max(0.0, comm_s - joined.joined_s);
}

void Trainer::load_batch() {
  data::fill_batch(*setup_.train, sampler_->next(), host_images_, host_labels_);
  backend_->copy_to_device(images_, host_images_.data(), host_images_.size());
  backend_->copy_to_device(labels_, host_labels_.data(), host_labels_.size());
  backend_->synchronize();
}

void Trainer::restore_progress(std::int64_t iterations, double overlapped_comm_s) {
  DSGD_ENFORCE(!prefetch_.valid(), "restore_progress before the first round");
  iterations_ = iterations;
  overlapped_comm_s_ = overlapped_comm_s;
  // Every compute_gradient() consumes one batch; a prefetch pending at the checkpoint is drawn again here.
  if (sampler_) sampler_->seek(static_cast<std::uint64_t>(iterations));
}

void Trainer::prefetch_batch() {
  DSGD_ENFORCE(!is_master() && !prefetch_.valid(), "prefetch_batch: a worker with no prefetch pending");
  if (!comm_.has_payload()) return;
  prefetch_ = comm_.start_beside([this] { load_batch(); });
}

float scaled_learning_rate(const Hyperparameters& hyper, int workers) {
  if (hyper.lr_scaling == nn::LrScaling::kNone) return hyper.learning_rate;
  return nn::linearly_scaled_rate(hyper.learning_rate, static_cast<std::int64_t>(hyper.batch) * workers,
                                  hyper.reference_batch);
}

std::unique_ptr<nn::Sgd> Trainer::make_sgd(float momentum) { return make_sgd(momentum, {0, parameter_count()}); }

std::unique_ptr<nn::Sgd> Trainer::make_sgd(float momentum, Shard shard, float rate_factor) {
  nn::SgdOptions options;
  options.learning_rate = hyper_.learning_rate * rate_factor;
  options.momentum = momentum;
  options.weight_decay = hyper_.weight_decay;
  options.scaled_learning_rate = scaled_learning_rate(hyper_, workers()) * rate_factor;
  options.warmup_iterations = hyper_.warmup_iterations;
  options.lars = hyper_.lars;
  options.lars_trust = hyper_.lars_trust;
  if (!has_data()) {
    // An optimiser over no floats: its steps are pure cost. One CPU back end serves every size-only rank.
    static const std::unique_ptr<nn::Backend> no_data_backend = nn::make_backend("cpu", nn::BackendOptions{});
    return std::make_unique<nn::Sgd>(*no_data_backend, 0, options);
  }
  if (shard.offset == 0 && shard.count == parameter_count()) {
    options.layout = layout_;  // LARS's layers
    return std::make_unique<nn::Sgd>(host_backend(), shard.count, options);
  }
  // LARS's layers, cut to the shard and counted from its start.
  const std::size_t shard_end = shard.offset + shard.count;
  for (const auto& layer : layout_) {
    const std::size_t begin = std::max(layer.offset, shard.offset);
    const std::size_t end = std::min(layer.offset + layer.count, shard_end);
    if (begin < end) options.layout.push_back({layer.layer, begin - shard.offset, end - begin});
  }
  return std::make_unique<nn::Sgd>(host_backend(), shard.count, options);
}

void Trainer::sgd_step(nn::Sgd& sgd, Category category) { sgd_step(sgd, category, {0, parameter_count()}); }

void Trainer::sgd_step(nn::Sgd& sgd, Category category, Shard shard) {
  // Weight decay, momentum and the step: about 4 FLOPs per parameter, touching weights, gradients and velocity
  // (read 3, write 2 floats: 20 bytes). LARS's layer norms read weights and gradients once more first: 4 FLOPs and
  // 8 bytes more per parameter.
  const auto n = static_cast<double>(shard.count);
  const bool lars = sgd.options().lars;
  elementwise((lars ? 8.0 : 4.0) * n, (lars ? 28.0 : 20.0) * n, category, [this, &sgd, shard] {
    sgd.step(parameters() + shard.offset, gradients() + shard.offset);
    host_backend().synchronize();
  });
}

void Trainer::elementwise(double flops, Category category, const std::function<void()>& kernel) {
  // The updates of the algorithms are axpy-like: 2 FLOPs per element reading two floats and writing one.
  elementwise(flops, 6.0 * flops, category, kernel);
}

void Trainer::elementwise(double flops, double bytes, Category category, const std::function<void()>& kernel) {
  ComputeStep step;
  step.flops = flops;
  step.bytes = bytes;
  step.kernel_class = "elementwise";
  step.category = category;
  step.kernel = kernel;
  // The algorithms' updates read and write this rank's own vectors (shared ones go through the Comm).
  step.rank_local = true;
  comm_.compute(step);
}

void Trainer::scale(float* data, float factor, Category category) {
  const std::size_t n = parameter_count();
  elementwise(static_cast<double>(n), 8.0 * static_cast<double>(n), category, [data, n, factor] {
    for (std::size_t i = 0; i < n; ++i) data[i] *= factor;
  });
}

template <typename PerSlice>
void Trainer::for_each_slice(float* data, PerSlice&& per_slice) {
  if (!hyper_.per_layer) {
    per_slice(Floats{data, parameter_count()});
    return;
  }
  for (const auto& slice : layout_) {
    if (slice.count > 0) per_slice(Floats{data ? data + slice.offset : nullptr, slice.count});
  }
}

void Trainer::send_weights(int peer, const float* data, Tag tag, Category category) {
  // Floats holds a mutable pointer; a send only reads through it.
  for_each_slice(const_cast<float*>(data),
                 [&](Floats slice) { comm_.send(peer, tag, slice.data, slice.bytes(), category); });
}

void Trainer::recv_weights(int peer, float* data, Tag tag, Category category) {
  for_each_slice(data, [&](Floats slice) { comm_.recv(peer, tag, slice.data, slice.bytes(), category); });
}

void Trainer::allreduce_weights(float* data, AllreduceAlgorithm algorithm, Category category) {
  for_each_slice(data, [&](Floats slice) { allreduce(comm_, slice, algorithm, {category, kFirstCollectiveTag}); });
}

void Trainer::reduce_weights(float* data, int root, Category category) {
  for_each_slice(data, [&](Floats slice) { reduce(comm_, slice, root, {category, kFirstCollectiveTag}); });
}

void Trainer::broadcast_weights(float* data, int root, Category category) {
  for_each_slice(data, [&](Floats slice) { broadcast(comm_, slice, root, {category, kFirstCollectiveTag}); });
}

}  // namespace dsgd::algorithms
