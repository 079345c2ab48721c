#pragma once
// One rank's training context, passed explicitly to its algorithm: the Comm, the hyper-parameters, a model replica
// (every rank, the master included, builds the same network from the same seed, so all start from the same
// weights), this worker's batches, and timed steps that charge seed 000's categories. Every step goes through
// Comm::compute, so natively it runs and is timed, and in simulation it costs its FLOPs.
//
// Memory: the algorithms read and write parameters() and gradients() in host memory. On the CPU back end these are
// the network's own; on the CUDA back end (TrainerSetup::backend) the network lives on the rank's GPU and these
// are host copies: compute_gradient() uploads the parameters before the forward pass and downloads the gradients
// after the backward pass, both charged to cpu-gpu para (seed 000's GPU workers with host-side exchanges;
// docs/nn-cuda.md "Distributed runs"). Optimisers run on the host copies.
//
// Size-only worlds (Comm::has_payload() false: a simulation at scale) hold no data at all: no network, no batches,
// parameters() and gradients() are null, model_vector() is empty, and on_data() skips its bookkeeping. What is
// left is what the algorithm sends and computes, with its sizes and FLOPs taken from the model description, so
// 4352 ranks of VGG (138 M parameters each) cost no memory beyond the actors. Models with branches (GoogLeNet)
// cannot train here but can be simulated this way.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/collectives.hpp"
#include "core/comm.hpp"
#include "core/data/dataset.hpp"
#include "core/data/sampler.hpp"
#include "core/layer_kernels.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/network.hpp"
#include "core/nn/sgd.hpp"
#include "core/stats.hpp"

namespace dsgd::algorithms {

// What every rank needs besides its Comm. `train` may be shared by the ranks of one process (threads).
struct TrainerSetup {
  // Shared, not copied: a simulation's thousands of ranks train the same model (docs/simulation.md "Profiles").
  std::shared_ptr<const ModelSpec> model;
  // The model's kernels at the run's batch (iteration_kernels); null: each Trainer derives its own.
  std::shared_ptr<const std::vector<LayerKernel>> kernels;
  std::shared_ptr<const data::Dataset> train;
  int threads_per_rank = 1;  // CPU threads of each rank's back end
  // Where forward and backward run: "cpu", or "cuda" on device rank mod (visible devices) of this machine.
  std::string backend = "cpu";
};

class Trainer {
 public:
  Trainer(Comm& comm, const AlgorithmInfo& info, const Hyperparameters& hyper, const TrainerSetup& setup);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  Comm& comm() { return comm_; }
  const Hyperparameters& hyper() const { return hyper_; }
  // The value of one of the algorithm's own options (AlgorithmInfo::options), its default unless given.
  double option(const std::string& name) const { return hyper_.own.at(name); }
  const AlgorithmInfo& info() const { return info_; }
  // Masters: 0 without one, 1, or Hyperparameters::servers for a sharded parameter server (ranks 0..servers()-1).
  int servers() const { return info_.has_master ? hyper_.servers : 0; }
  // A master: the master, or one of the servers of a sharded parameter server.
  bool is_master() const { return comm_.rank() < servers(); }
  int master() const { return 0; }
  int workers() const { return comm_.size() - servers(); }
  // 0..workers()-1 on a worker, -1 on a master.
  int worker_index() const { return is_master() ? -1 : comm_.rank() - servers(); }
  // The rank of worker `index`.
  int worker_rank(int index) const { return index + servers(); }
  // The range of the packed parameters that server `server` owns (all of them with one server).
  Shard shard(int server) const { return shard_of(parameter_count_, servers(), server); }
  // EASGD's alpha = eta * rho (or 0.9 / P when rho is 0).
  float elastic_alpha() const;

  // Where the network computes (its parameters() are the host copies on "cuda").
  nn::Backend& backend() { return *backend_; }
  // The back end of host memory: backend() on "cpu", the host's on a device back end (where optimisers run).
  nn::Backend& host_backend() { return host_backend_ ? *host_backend_ : *backend_; }
  const ModelSpec& model() const { return *setup_.model; }
  int threads_per_rank() const { return setup_.threads_per_rank; }
  // The options of this rank's CPU back ends: its threads and the run's seed.
  nn::BackendOptions cpu_options() const;
  // Only where has_data(): a size-only world builds no network.
  nn::Network& network();
  std::size_t parameter_count() const { return parameter_count_; }
  float* parameters() { return !network_ ? nullptr : host_backend_ ? host_parameters_.data() : network_->parameters(); }
  float* gradients() { return !network_ ? nullptr : host_backend_ ? host_gradients_.data() : network_->gradients(); }
  // False in a size-only world (see above).
  bool has_data() const { return comm_.has_payload(); }
  // A model-sized work buffer, zero-filled: parameter_count() floats, or none in a size-only world.
  std::vector<float> model_vector() const;
  // Host-side bookkeeping on model-sized data (copies, fills) that costs no modelled time: runs `work` only where
  // the data exists.
  template <typename Work>
  void on_data(Work&& work) {
    if (has_data()) work();
  }
  Floats parameter_floats() { return {parameters(), parameter_count()}; }
  Floats gradient_floats() { return {gradients(), parameter_count()}; }

  // Draws this worker's next batch and runs forward and backward on the current parameters: charges cpu-gpu data
  // and for/backward, leaves the gradients in gradients(). Throws Error if the loss is not finite.
  double compute_gradient();
  // compute_gradient, layer by layer, for wait-free backpropagation: the forward pass (with the loss and its
  // gradient) is one compute step, then each layer's backward pass its own step of that layer's FLOPs (twice its
  // forward's), from the last layer to the first, each followed by on_layer_ready(layer) -- `layer` indexes
  // layout(), whose slice of gradients() is then final. The same gradients and loss as compute_gradient(), and
  // FLOPs that sum to its (size-only worlds take them from the model description, layer by layer).
  using LayerReady = std::function<void(std::size_t layer)>;
  double compute_gradient(const LayerReady& on_layer_ready);
  // compute_gradient in the steps of GeePS's virtual iteration (algorithms/geeps/memory_plan.hpp), for an algorithm
  // that moves buffers between steps: each zoo layer's forward pass, then each one's backward pass from the last --
  // the final softmax's forward step computes the loss and its gradient, its backward step nothing. Each step is
  // handed to `around(step, run)`, which must call run() once (and may start and wait for work around it); the
  // steps are numbered 0.. in that order, as the pattern's. The same gradients, loss and FLOPs as
  // compute_gradient(on_layer_ready), which it also calls after each layer's backward step.
  using StepAround = std::function<void(std::size_t step, const std::function<void()>& run)>;
  double compute_gradient(const StepAround& around, const LayerReady& on_layer_ready);
  // The network in two parts, for an algorithm that runs its last layers itself (hybrid-sgd's model-parallel head):
  // forward_prefix draws this worker's next batch (cpu-gpu data), uploads the parameters of layers [0, layers) on a
  // device back end, and runs their forward pass as one for/backward step of their FLOPs; it returns their output in
  // host memory (batch x its elements; on a device back end a copy, cpu-gpu para; null in a size-only world). The
  // caller writes dL/d(that output) into prefix_output_gradient() (host memory) and calls backward_prefix(), which
  // runs those layers' backward passes from the last, one step and one on_layer_ready(layer) each as
  // compute_gradient(on_layer_ready) does, and counts the iteration with the caller's `loss`.
  const float* forward_prefix(std::size_t layers);
  float* prefix_output_gradient();
  void backward_prefix(double loss, const LayerReady& on_layer_ready);
  // The labels of the batch the last forward pass drew (host memory, class indices as floats); empty in a size-only
  // world.
  std::span<const float> batch_labels() const { return host_labels_; }
  // Where each layer's parameters sit in the packed buffers (size-only worlds: as nn::Network lays them out, plus
  // the final softmax's empty slice).
  const std::vector<nn::ParameterSlice>& layout() const { return layout_; }
  // The layers the backward pass readies (on_layer_ready): every zoo layer but a final softmax, whose place the loss
  // takes; the first network_layers() entries of layout().
  std::size_t network_layers() const;
  // Starts copying the next batch to the device in the background (seed 000's EASGD3 overlap); the next
  // compute_gradient() waits for it and charges only the wait to cpu-gpu data. Natively a std::thread; in a
  // simulation it runs in that wait (Comm::start_beside), and without payloads there is nothing to copy.
  void prefetch_batch();
  // A local update by `sgd` (this rank's optimiser) of parameters() from gradients(), charged to `category`.
  void sgd_step(nn::Sgd& sgd, Category category = Category::kGpuUpdate);
  // The same on `shard` of the parameters and gradients only, with an optimiser made for that shard.
  void sgd_step(nn::Sgd& sgd, Category category, Shard shard);
  // An optimiser for this replica's parameters.
  std::unique_ptr<nn::Sgd> make_sgd(float momentum);
  // An optimiser for `shard` of them (a sharded server's). LARS's layers are cut at the shard's edges, so a layer
  // split between two servers takes its norms over each part. Its rates are the run's times `rate_factor`.
  std::unique_ptr<nn::Sgd> make_sgd(float momentum, Shard shard, float rate_factor = 1.0F);
  // Runs `kernel` as a compute step of `flops` elementwise FLOPs charged to `category`, moving 6 bytes per FLOP
  // (axpy-like) unless `bytes` says otherwise: a step of one FLOP per element that reads two floats and writes one
  // moves 12 bytes per FLOP, and is priced by them where memory bounds it. The kernel must touch only this rank's
  // memory (ComputeStep::rank_local): a numeric simulation may run it on another thread.
  void elementwise(double flops, Category category, const std::function<void()>& kernel);
  void elementwise(double flops, double bytes, Category category, const std::function<void()>& kernel);
  // data[i] *= factor for the parameter_count() floats at `data` (null in a size-only world): an elementwise step of
  // one FLOP per float, charged to `category` (the average of summed gradients).
  void scale(float* data, float factor, Category category = Category::kGpuUpdate);

  // Weights exchanges honouring Hyperparameters::per_layer: one message (or collective) for the packed buffer, or
  // one per layer of network().layout() (Fig 10).
  void send_weights(int peer, const float* data, Tag tag, Category category);
  void recv_weights(int peer, float* data, Tag tag, Category category);
  void allreduce_weights(float* data, AllreduceAlgorithm algorithm, Category category);
  void reduce_weights(float* data, int root, Category category);
  void broadcast_weights(float* data, int root, Category category);

  // Training losses since the runner last took them (the runner averages them over ranks per round).
  double loss_sum() const { return loss_sum_; }
  std::int64_t loss_count() const { return loss_count_; }
  void reset_losses() {
    loss_sum_ = 0;
    loss_count_ = 0;
  }
  std::int64_t iterations() const { return iterations_; }  // compute_gradient() calls so far
  // Resuming from a checkpoint (algorithms/run_checkpoint.hpp), before the first round: this rank has made
  // `iterations` compute_gradient() calls (a worker's next batch is the one after them) and overlapped
  // `overlapped_comm_s` of communication.
  void restore_progress(std::int64_t iterations, double overlapped_comm_s);

  // A parameter server's record of how stale the pushes it served were (algorithms/parameter_server.hpp), in
  // updates; empty where the algorithm has none. The runner reports rank 0's.
  CountHistogram& staleness() { return staleness_; }
  // SSP's record (ssp-sgd): for each push a server applied, the clocks (pushes) by which the pushing worker
  // trailed the most advanced worker, at most the staleness bound. The runner reports rank 0's.
  CountHistogram& clock_staleness() { return clock_staleness_; }
  // Communication that ran beside this rank's compute steps (a stream's, Comm::start_stream), in seconds; the
  // runner reports rank 0's. Algorithms with a stream add what each join leaves overlapped (overlapped_comm_s).
  void add_overlapped_comm(double seconds) { overlapped_comm_s_ += seconds; }
  double overlapped_comm_s() const { return overlapped_comm_s_; }

 private:
  template <typename PerSlice>
  void for_each_slice(float* data, PerSlice&& per_slice);
  bool ends_in_softmax() const;
  void build_rank_data();             // the constructor's back end, network, sampler and buffers (Comm::set_up)
  void load_batch();                  // the next batch into images_ and labels_
  void copy_batch();                  // compute_gradient's first step: the batch to the device (or the prefetch's rest)
  void finish_gradient(double loss);  // counts the iteration and checks the loss
  // A for/backward compute step ("conv") of `flops`, running `kernels` of the iteration (docs/simulation.md
  // "Kernels by shape": a platform that describes its processors' kernels prices those instead).
  void forward_backward(double flops, std::function<void()> kernel, std::span<const LayerKernel> kernels);
  // The backward kernels of layer `layer` (none for a layer without any).
  std::span<const LayerKernel> backward_kernels(std::size_t layer) const;
  // On a device back end: the first `count` host parameters to the device, and gradients [offset, offset + count)
  // back, each a copy step charged to cpu-gpu para. Nothing on the CPU back end.
  void upload_parameters(std::size_t count);
  // layers-1 .. 0, a step each, each through `around` (if any) as step first_step, first_step + 1, ...
  void backward_layers(std::size_t layers, const LayerReady& on_layer_ready, const StepAround* around = nullptr,
                       std::size_t first_step = 0);
  void download_gradients(std::size_t offset, std::size_t count);
  void parameter_copy(std::size_t floats, const std::function<void()>& copy);  // a cpu-gpu para copy step

  Comm& comm_;
  AlgorithmInfo info_;
  Hyperparameters hyper_;
  TrainerSetup setup_;
  std::unique_ptr<nn::Backend> backend_;       // where the network computes
  std::unique_ptr<nn::Backend> host_backend_;  // on a device back end: the host's, for optimisers; else null
  std::unique_ptr<nn::Network> network_;       // null in a size-only world
  // On a device back end, what parameters() and gradients() return.
  std::vector<float> host_parameters_;
  std::vector<float> host_gradients_;
  std::size_t parameter_count_ = 0;
  std::vector<nn::ParameterSlice> layout_;
  // The iteration's kernels (iteration_kernels: layer l's forward at index l, then the backward passes last layer
  // first), where each layer's backward ones start, and what a worker holds while they run.
  std::shared_ptr<const std::vector<LayerKernel>> kernel_list_;
  std::span<const LayerKernel> kernels_;                             // *kernel_list_
  std::vector<std::pair<std::size_t, std::size_t>> backward_range_;  // per layer: [begin, end) in kernels_
  double resident_bytes_ = 0;
  std::size_t prefix_layers_ = 0;     // forward_prefix's
  std::vector<float> prefix_output_;  // on a device back end: host copies of the prefix's output and its gradient
  std::vector<float> prefix_gradient_;
  std::unique_ptr<data::BatchSampler> sampler_;
  std::vector<float> host_images_;
  std::vector<float> host_labels_;
  float* images_ = nullptr;  // back-end buffers
  float* labels_ = nullptr;
  std::future<void> prefetch_;  // valid while a prefetched batch is on its way
  double loss_sum_ = 0;
  std::int64_t loss_count_ = 0;
  std::int64_t iterations_ = 0;
  CountHistogram staleness_;
  CountHistogram clock_staleness_;
  double overlapped_comm_s_ = 0;
};

// The communication of a joined stream that its caller did not wait for: the stream's communication categories
// minus the caller's wait in join() (what the caller waited for is exposed; the rest ran beside its compute).
double overlapped_comm_s(const StreamResult& joined);

}  // namespace dsgd::algorithms
