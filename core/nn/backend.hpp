#pragma once
// Neural-network layers with forward and backward, on a back end chosen at run time (issue 4):
//   "cpu"  -- oneDNN primitives (the library lineage Intel Caffe used on KNL) and OpenBLAS GEMM, threaded with OpenMP;
//   "cuda" -- cuDNN and cuBLAS, every tensor and the weights resident on the device (seed 000's Sync EASGD2 idea).
// A Backend owns memory and makes layers; every pointer handed to a layer or a Backend call points into that
// back end's memory (host memory for "cpu", device memory for "cuda"). Host data moves in and out only through
// copy_to_device / copy_to_host, so a caller always knows when it pays for a transfer (seed 000's "cpu-gpu data"
// and "cpu-gpu para" categories).
//
// Tensors are NCHW float32, batch-major: a layer's input is batch x LayerSpec::input.elements() floats, its output
// batch x LayerSpec::output.elements(). Parameters of a layer are one contiguous slice of the network's packed
// buffer (core/nn/network.hpp): weights first (convolution: out x in/groups x kh x kw; inner product: out x in),
// then biases (batch norm: scale then shift).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/model_zoo.hpp"

namespace dsgd::nn {

class Layer;

// A swap area for background transfers (GeePS's copy thread, algorithms/geeps/): `bytes` of host memory (pinned
// on a device) and as many of the back end's, and copies between them on a queue of their own, beside the compute
// queue, so they overlap the layers' kernels. Each call returns once its bytes have arrived; calls may come from
// another thread than the compute's (one at a time).
class SwapArea {
 public:
  virtual ~SwapArea() = default;
  virtual std::size_t bytes() const = 0;
  // Moves the first `bytes` (at most bytes()) host -> back end, or back end -> host.
  virtual void to_device(std::size_t bytes) = 0;
  virtual void to_host(std::size_t bytes) = 0;
};

// The host back end's swap area: two host buffers and memcpy between them.
std::unique_ptr<SwapArea> make_host_swap_area(std::size_t bytes);

struct BackendOptions {
  int threads = 0;         // CPU threads (OpenMP); 0: all the machine has
  int device = 0;          // CUDA device index
  std::uint64_t seed = 1;  // for dropout masks
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;  // "cpu" or "cuda"
  // What actually runs, for results' context: libraries and versions, threads, device name.
  virtual std::string description() const = 0;

  // Memory of this back end. allocate() returns zeroed memory; release(nullptr) does nothing.
  virtual float* allocate(std::size_t count) = 0;
  virtual void release(float* data) = 0;
  virtual void copy_to_device(float* device, const float* host, std::size_t count) = 0;
  virtual void copy_to_host(float* host, const float* device, std::size_t count) = 0;
  virtual void copy(float* destination, const float* source, std::size_t count) = 0;  // within this back end
  // Waits until queued work is done (timing on asynchronous devices); a no-op on the CPU.
  virtual void synchronize() = 0;
  // A swap area of `bytes` for background transfers (above). By default the host's.
  virtual std::unique_ptr<SwapArea> make_swap_area(std::size_t bytes) { return make_host_swap_area(bytes); }

  // A layer of `spec` for batches of `batch` images. Throws UnavailableError for a kind this back end lacks
  // (concat and add have no single-input form here), InputError for an impossible shape.
  virtual std::unique_ptr<Layer> create_layer(const LayerSpec& spec, int batch) = 0;

  // y <- a * x + b * y over n floats (optimizer updates, elastic averaging).
  virtual void axpby(float a, const float* x, float b, float* y, std::size_t n) = 0;
  // The sum of x[i]^2 over n floats (LARS's layer norms), returned to the host. The same on every call for the same
  // input on one back end: it does not depend on the thread count.
  virtual double sum_of_squares(const float* x, std::size_t n) = 0;

  // Softmax over `classes` per row of `logits` (batch x classes) and the mean cross-entropy against `labels`
  // (batch ints in [0, classes), in this back end's memory as floats holding integers). Writes the gradient of
  // the mean loss w.r.t. the logits into grad_logits (may be null) and returns the mean loss. Counts rows whose
  // arg-max equals the label into *correct when correct is not null.
  virtual double softmax_cross_entropy(const float* logits, const float* labels, int batch, int classes,
                                       float* grad_logits, int* correct) = 0;
};

// One layer on one back end. Stateless across batches except what backward needs from forward (dropout's
// mask, pooling's arg-max) and scratch; so forward then backward on the same batch, in that order.
class Layer {
 public:
  virtual ~Layer() = default;

  virtual const LayerSpec& spec() const = 0;
  virtual int batch() const = 0;
  // Floats this layer takes in the packed parameter buffer (equals spec().parameters).
  virtual std::size_t parameter_count() const = 0;

  // out <- f(in; params). `training` turns dropout on.
  virtual void forward(const float* in, float* out, const float* params, bool training) = 0;
  // Given grad_out = dL/d(out), writes grad_in = dL/d(in) (skipped when grad_in is null, e.g. the first layer)
  // and grad_params = dL/d(params) (overwritten, not accumulated). `in` and `out` are forward's.
  virtual void backward(const float* in, const float* out, const float* grad_out, float* grad_in, const float* params,
                        float* grad_params) = 0;
};

// Each back end's constructor for every single-input layer kind. create_layer_from() dispatches on spec.kind, so
// the batch check and the error for join layers (concat, add) read the same on every back end.
struct LayerMakers {
  using Make = std::function<std::unique_ptr<Layer>(const LayerSpec& spec, int batch)>;
  Make convolution, pooling, relu, lrn, batch_norm, inner_product, dropout, softmax;
};

// For the layers that keep their input's shape and have no parameters (relu, softmax, dropout, LRN): throws
// InputError "<what> '<name>': output shape differs from input shape, or parameters given" for any other spec.
void check_shape_preserving(std::string_view what, const LayerSpec& spec);

// A back end's makers from its layer constructors `make(context, spec, batch)`, given in LayerMakers' member order,
// each bound to `context` (a std::ref or a shared pointer: the makers keep a copy).
template <typename Context, typename... Make>
LayerMakers bind_layer_makers(Context context, Make... make) {
  static_assert(sizeof...(Make) == 8, "one constructor per member of LayerMakers");
  return {
      LayerMakers::Make([context, make](const LayerSpec& spec, int batch) { return make(context, spec, batch); })...};
}

// The layer of `spec` from `makers` (pooling serves max and average). Throws InputError for batch < 1,
// UnavailableError naming `backend` for concat and add.
std::unique_ptr<Layer> create_layer_from(std::string_view backend, const LayerMakers& makers, const LayerSpec& spec,
                                         int batch);

// The back ends this build has and that can run here ("cpu" always; "cuda" when built and a device is present).
std::vector<std::string> available_backends();
// All back end names this build knows, available or not.
std::vector<std::string> backend_names();
// The devices back end `name` can run on here: 1 for "cpu" (the host), the visible GPUs for "cuda" (0 where it was
// not built or there is none). Throws UnknownNameError for other names.
int backend_device_count(std::string_view name);

// Makes a back end. Throws UnknownNameError listing backend_names(), UnavailableError when it was not built or
// no device is present.
std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options = {});

}  // namespace dsgd::nn
