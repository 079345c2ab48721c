#pragma once
// Internals of the "cuda" back end shared by its layer files (the counterpart of core/nn/cpu/context.hpp): the
// device, stream and library handles, status checks that throw dsgd errors, RAII wrappers for device memory and
// cuDNN descriptors, and the base class every layer extends. Not a public header (it pulls in cuDNN and cuBLAS).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"

namespace dsgd::nn::cuda {

// Throw when a call failed: UnavailableError when the cause is a missing driver or device, Error otherwise, with
// `what` (the call and its arguments worth knowing) and the library's own message.
void check(cudaError_t status, std::string_view what);
void check(cudnnStatus_t status, std::string_view what);
void check(cublasStatus_t status, std::string_view what);

inline bool succeeded(cudaError_t status) { return status == cudaSuccess; }
inline bool succeeded(cudnnStatus_t status) { return status == CUDNN_STATUS_SUCCESS; }
inline bool succeeded(cublasStatus_t status) { return status == CUBLAS_STATUS_SUCCESS; }

// The cuBLAS calls of this back end, from the library loaded at its first use instead of linked: libcublas pulls in
// libcublasLt, whose start-up costs every process that links it ~0.4 s and 25,000 page faults, GPU or not
// (docs/nn-cuda.md "Loading").
struct Cublas {
  decltype(&::cublasCreate) create;
  decltype(&::cublasDestroy) destroy;
  decltype(&::cublasSetStream) set_stream;
  decltype(&::cublasSetMathMode) set_math_mode;
  decltype(&::cublasGetVersion) get_version;
  decltype(&::cublasGetStatusString) status_string;
  decltype(&::cublasGetStatusName) status_name;
  decltype(&::cublasSgemm) sgemm;
  decltype(&::cublasSgemv) sgemv;
  decltype(&::cublasSdot) sdot;
};

// Loads cuBLAS on the first call (any thread). Throws UnavailableError naming the library when it cannot be loaded
// or lacks a call.
const Cublas& cublas_library();

// One device, one stream and the cuDNN and cuBLAS handles bound to it. Shared (std::shared_ptr) by the back end
// and its layers, so a layer that outlives its back end still frees its memory on a valid context.
class Context {
 public:
  // Selects `device`, creates the stream and the handles. Throws Error with the library's message on failure.
  Context(int device, std::uint64_t seed);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device() const { return device_; }
  std::uint64_t seed() const { return seed_; }
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }

  // Makes this context's device current on the calling thread. CUDA's current device is per host thread, and the
  // workers of one process may drive back ends on different devices, so every entry point calls this first.
  void activate() const;

  // Waits until everything queued on the stream has run; throws on an error of any of that work.
  void synchronize() const;

  // Scratch memory shared by all layers of this back end: safe because they run one after another on one stream.
  // Grows (never shrinks) to at least `bytes`; the pointer stays valid until a later call asks for more, so layers
  // reserve their need at construction and fetch the pointer at each call. Returns null for 0 bytes.
  void* workspace(std::size_t bytes);

  // A device vector of at least `count` ones (the inner product's bias as a rank-1 GEMM), same validity as above.
  const float* ones(std::size_t count);

 private:
  int device_;
  std::uint64_t seed_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  float* ones_ = nullptr;
  std::size_t ones_count_ = 0;
};

// Device memory owned by a layer. Empty until sized; freed (after the stream drains) on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `count` floats on `context`'s device, zeroed; nothing for count 0.
  DeviceBuffer(const Context& context, std::size_t count);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* get() const { return data_; }
  std::size_t count() const { return count_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  void reset() noexcept;

  float* data_ = nullptr;
  std::size_t count_ = 0;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

// A cuDNN descriptor, created on construction and destroyed with its owner.
template <typename Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
class Descriptor {
 public:
  Descriptor() { check(Create(&handle_), "creating a cuDNN descriptor"); }
  ~Descriptor() { Destroy(handle_); }  // only fails for an invalid handle, which construction rules out
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Handle get() const { return handle_; }

 private:
  Handle handle_{};
};

using TensorDescriptor = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor =
    Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;
using ActivationDescriptor =
    Descriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;
using LrnDescriptor = Descriptor<cudnnLRNDescriptor_t, cudnnCreateLRNDescriptor, cudnnDestroyLRNDescriptor>;

// Sets `descriptor` to a packed float NCHW tensor.
void set_nchw(const TensorDescriptor& descriptor, int n, int c, int h, int w);
// Sets `descriptor` to a packed float NCHW tensor of `batch` images of `shape`.
void set_nchw(const TensorDescriptor& descriptor, int batch, const Shape& shape);

// `value` as an int, for cuDNN's and cuBLAS's 32-bit sizes; throws InputError naming the layer and `what` when it
// does not fit.
int to_int(std::int64_t value, const LayerSpec& spec, std::string_view what);

// cuDNN's vectorised kernels want 16-byte aligned tensors, but a layer's slice of the packed parameter buffer may
// start at any float (and a caller may pass an offset into a batch of images). Staging passes aligned pointers
// through untouched and copies misaligned ones into (in) or out of (out, then done) an aligned buffer of its own.
class Staging {
 public:
  Staging(const Context& context, std::size_t count) : context_(&context), count_(count) {}
  // `data`, or an aligned copy of its `count` floats.
  const float* in(const float* data);
  // `data`, or the aligned buffer for the caller to write into; then done(data) copies the buffer to `data`.
  float* out(float* data);
  void done(float* data);

 private:
  float* buffer();

  const Context* context_;
  std::size_t count_;
  DeviceBuffer buffer_;
};

// spec(), batch() and parameter_count() for every CUDA layer; checks that a batch of its tensors fits cuDNN's
// 32-bit element counts.
class CudaLayer : public Layer {
 public:
  CudaLayer(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);
  const LayerSpec& spec() const override { return spec_; }
  int batch() const override { return batch_; }
  std::size_t parameter_count() const override { return static_cast<std::size_t>(spec_.parameters); }

 protected:
  // The context, made current on the calling thread (every call that launches work starts with it).
  Context& activated() const {
    context_->activate();
    return *context_;
  }

  // check() for a call of this layer, naming the layer; the message is built only on failure (hot path).
  template <typename Status>
  void check_call(Status status, const char* function) const {
    if (!succeeded(status)) check(status, std::string(function) + " in layer '" + spec_.name + "'");
  }

  std::size_t in_count() const {
    return static_cast<std::size_t>(batch_) * static_cast<std::size_t>(spec_.input.elements());
  }
  std::size_t out_count() const {
    return static_cast<std::size_t>(batch_) * static_cast<std::size_t>(spec_.output.elements());
  }

  std::shared_ptr<Context> context_;
  LayerSpec spec_;
  int batch_;
};

// Scalars for cuDNN's and cuBLAS's out = alpha * op(...) + beta * out, in host memory.
inline constexpr float kOne = 1.0f;
inline constexpr float kZero = 0.0f;

// The layer factories, one per file, with the CPU back end's file names. Each throws InputError for a spec whose
// shapes do not fit its geometry.
std::unique_ptr<Layer> make_convolution(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_pooling(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_relu(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_lrn(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_inner_product(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_dropout(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_batch_norm(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_softmax(std::shared_ptr<Context> context, const LayerSpec& spec, int batch);

}  // namespace dsgd::nn::cuda
