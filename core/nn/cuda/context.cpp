#include "core/nn/cuda/context.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/nn/cuda/kernels.hpp"

namespace dsgd::nn::cuda {

// --- status checks ---------------------------------------------------------------------------------------------------

namespace {

template <typename Status>
bool is_one_of(Status status, std::initializer_list<Status> statuses) {
  return std::find(statuses.begin(), statuses.end(), status) != statuses.end();
}

// The failure of `what`: UnavailableError when the library cannot run on this machine at all, Error otherwise.
[[noreturn]] void fail(std::string_view what, const std::string& reason, bool unavailable) {
  const std::string message = "cuda back end: " + std::string(what) + " failed: " + reason;
  if (unavailable) throw UnavailableError(message);
  throw Error(message);
}

}  // namespace

void check(cudaError_t status, std::string_view what) {
  if (status == cudaSuccess) return;
  // Clear the error so that the next launch's cudaGetLastError() does not report it again (sticky errors, such as
  // a kernel's illegal address, stay anyway: the context is unusable after them).
  cudaGetLastError();
  fail(what, std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")",
       is_one_of(status, {cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorDevicesUnavailable,
                          cudaErrorSystemDriverMismatch, cudaErrorCompatNotSupportedOnDevice,
                          cudaErrorNoKernelImageForDevice}));
}

void check(cudnnStatus_t status, std::string_view what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  std::string reason = cudnnGetErrorString(status);
  // cuDNN 9 keeps a more specific message for the last failure of the calling thread.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  if (detail[0] != '\0') reason += std::string(" (") + detail + ")";
  // Unavailable: cuDNN cannot run here at all (a missing or mismatched library, driver or GPU architecture).
  fail(what, reason,
       is_one_of(status, {CUDNN_STATUS_NOT_INITIALIZED, CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH,
                          CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED, CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER,
                          CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART, CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
                          CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING,
                          CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE}));
}

void check(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  fail(what, std::string(cublas_library().status_string(status)) + " (" + cublas_library().status_name(status) + ")",
       is_one_of(status, {CUBLAS_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_ARCH_MISMATCH}));
}

// --- Context
// -----------------------------------------------------------------------------------------------------------

Context::Context(int device, std::uint64_t seed) : device_(device), seed_(seed) {
  activate();
  // Non-blocking: no implicit synchronisation with the legacy default stream, which other code in the process
  // (a benchmark, a test) may use.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  try {
    check(cudnnCreate(&cudnn_), "cudnnCreate");
    check(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
    check(cublas_library().create(&cublas_), "cublasCreate");
    check(cublas_library().set_stream(cublas_, stream_), "cublasSetStream");
    // Plain FP32 arithmetic: TF32 tensor cores would round inputs to 10 mantissa bits, and results must agree with
    // the CPU back end and pass finite-difference checks.
    check(cublas_library().set_math_mode(cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  } catch (...) {
    if (cublas_ != nullptr) cublas_library().destroy(cublas_);
    if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

Context::~Context() {
  // Destructors must not throw: statuses are ignored. Work still queued finishes before its memory goes.
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  cudaFree(workspace_);
  cudaFree(ones_);
  cublas_library().destroy(cublas_);
  cudnnDestroy(cudnn_);
  cudaStreamDestroy(stream_);
}

void Context::activate() const {
  const cudaError_t status = cudaSetDevice(device_);
  if (!succeeded(status)) check(status, "cudaSetDevice(" + std::to_string(device_) + ")");
}

void Context::synchronize() const { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

void* Context::workspace(std::size_t bytes) {
  if (bytes > workspace_bytes_) {
    // Queued work may still use the old buffer.
    synchronize();
    check(cudaFree(workspace_), "cudaFree (workspace)");
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    check(cudaMalloc(&workspace_, bytes), "cudaMalloc of a " + std::to_string(bytes) + "-byte cuDNN workspace");
    workspace_bytes_ = bytes;
  }
  return bytes == 0 ? nullptr : workspace_;
}

const float* Context::ones(std::size_t count) {
  if (count > ones_count_) {
    synchronize();
    check(cudaFree(ones_), "cudaFree (ones)");
    ones_ = nullptr;
    ones_count_ = 0;
    void* data = nullptr;
    check(cudaMalloc(&data, count * sizeof(float)), "cudaMalloc of " + std::to_string(count) + " ones");
    ones_ = static_cast<float*>(data);
    check(launch_fill(ones_, 1.0f, count, stream_), "fill kernel (ones)");
    ones_count_ = count;
  }
  return ones_;
}

// --- DeviceBuffer
// --------------------------------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(const Context& context, std::size_t count)
    : count_(count), device_(context.device()), stream_(context.stream()) {
  if (count == 0) return;
  void* data = nullptr;
  check(cudaMalloc(&data, count * sizeof(float)),
        "cudaMalloc of " + std::to_string(count * sizeof(float)) + " bytes on device " + std::to_string(device_));
  data_ = static_cast<float*>(data);
  // Ordered before any later work on the stream, which is the only stream that touches this memory.
  const cudaError_t status = cudaMemsetAsync(data_, 0, count * sizeof(float), stream_);
  if (status != cudaSuccess) {
    reset();
    check(status, "cudaMemsetAsync");
  }
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      count_(std::exchange(other.count_, 0)),
      device_(other.device_),
      stream_(other.stream_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    count_ = std::exchange(other.count_, 0);
    device_ = other.device_;
    stream_ = other.stream_;
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (data_ == nullptr) return;
  // Statuses ignored: this runs in destructors, and a failure here leaves nothing to recover.
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  cudaFree(data_);
  data_ = nullptr;
  count_ = 0;
}

// --- helpers
// -------------------------------------------------------------------------------------------------------------

void set_nchw(const TensorDescriptor& descriptor, int n, int c, int h, int w) {
  check(cudnnSetTensor4dDescriptor(descriptor.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w),
        "cudnnSetTensor4dDescriptor(" + std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
            std::to_string(w) + ")");
}

void set_nchw(const TensorDescriptor& descriptor, int batch, const Shape& shape) {
  // CudaLayer has checked that batch x elements fits an int, so each dimension does.
  set_nchw(descriptor, batch, static_cast<int>(shape.channels), static_cast<int>(shape.height),
           static_cast<int>(shape.width));
}

int to_int(std::int64_t value, const LayerSpec& spec, std::string_view what) {
  if (value < 0 || value > INT_MAX) {
    throw InputError("layer '" + spec.name + "': " + std::string(what) + " of " + std::to_string(value) +
                     " exceeds cuDNN's and cuBLAS's 32-bit sizes");
  }
  return static_cast<int>(value);
}

// --- Staging
// -------------------------------------------------------------------------------------------------------------

namespace {
constexpr std::uintptr_t kAlignment = 16;
bool aligned(const void* data) { return reinterpret_cast<std::uintptr_t>(data) % kAlignment == 0; }
}  // namespace

float* Staging::buffer() {
  if (!buffer_) buffer_ = DeviceBuffer(*context_, count_);  // cudaMalloc gives 256-byte alignment
  return buffer_.get();
}

const float* Staging::in(const float* data) {
  if (aligned(data) || count_ == 0) return data;
  float* staged = buffer();
  check(cudaMemcpyAsync(staged, data, count_ * sizeof(float), cudaMemcpyDeviceToDevice, context_->stream()),
        "cudaMemcpyAsync (staging a misaligned tensor)");
  return staged;
}

float* Staging::out(float* data) { return aligned(data) || count_ == 0 ? data : buffer(); }

void Staging::done(float* data) {
  if (aligned(data) || count_ == 0) return;
  check(cudaMemcpyAsync(data, buffer_.get(), count_ * sizeof(float), cudaMemcpyDeviceToDevice, context_->stream()),
        "cudaMemcpyAsync (unstaging a misaligned tensor)");
}

// --- CudaLayer
// -----------------------------------------------------------------------------------------------------------

CudaLayer::CudaLayer(std::shared_ptr<Context> context, const LayerSpec& spec, int batch)
    : context_(std::move(context)), spec_(spec), batch_(batch) {
  for (const Shape* shape : {&spec.input, &spec.output}) {
    if (shape->channels < 1 || shape->height < 1 || shape->width < 1) {
      throw InputError("layer '" + spec.name + "': empty shape " + std::to_string(shape->channels) + "x" +
                       std::to_string(shape->height) + "x" + std::to_string(shape->width));
    }
    to_int(static_cast<std::int64_t>(batch) * shape->elements(), spec, "a batch of tensor elements");
  }
  if (spec.parameters < 0) {
    throw InputError("layer '" + spec.name + "': negative parameter count " + std::to_string(spec.parameters));
  }
}

}  // namespace dsgd::nn::cuda
