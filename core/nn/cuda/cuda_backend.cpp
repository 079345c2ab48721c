#include "core/nn/cuda/cuda_backend.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"
#include "core/nn/cuda/kernels.hpp"

namespace dsgd::nn {
namespace cuda {
namespace {

// Libraries encode versions as major * 10000 + minor * 100 + patch (cuDNN 9, cuBLAS).
std::string library_version(long long version) {
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

// The CUDA runtime and driver encode versions as major * 1000 + minor * 10.
std::string cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string describe(const Context& context) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, context.device()), "cudaGetDeviceProperties");
  int runtime = 0;
  int driver = 0;
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  int cublas = 0;
  check(cublas_library().get_version(context.cublas(), &cublas), "cublasGetVersion");
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1 << 30));
  return "cuda: " + std::string(prop.name) + " (device " + std::to_string(context.device()) + ", sm_" +
         std::to_string(prop.major) + std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) +
         " SMs, " + memory + "), CUDA runtime " + cuda_version(runtime) + " (driver " + cuda_version(driver) +
         "), cuDNN " + library_version(static_cast<long long>(cudnnGetVersion())) + ", cuBLAS " +
         library_version(cublas) + "; one stream, FP32 without tensor cores";
}

// Pinned host memory, device memory and a non-blocking stream of their own: the copies run on the device's copy
// engines beside the compute stream (which is not the legacy default stream, so nothing serialises them).
class CudaSwapArea final : public nn::SwapArea {
 public:
  CudaSwapArea(std::shared_ptr<Context> context, std::size_t bytes) : context_(std::move(context)), bytes_(bytes) {
    context_->activate();
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (swap area)");
    if (bytes_ == 0) return;
    if (const cudaError_t status = cudaMallocHost(&host_, bytes_); status != cudaSuccess) {
      release();
      check(status, "cudaMallocHost of " + std::to_string(bytes_) + " swap-area bytes");
    }
    if (const cudaError_t status = cudaMalloc(&device_, bytes_); status != cudaSuccess) {
      release();
      check(status, "cudaMalloc of " + std::to_string(bytes_) + " swap-area bytes on device " +
                        std::to_string(context_->device()));
    }
  }
  ~CudaSwapArea() override { release(); }
  CudaSwapArea(const CudaSwapArea&) = delete;
  CudaSwapArea& operator=(const CudaSwapArea&) = delete;

  std::size_t bytes() const override { return bytes_; }
  void to_device(std::size_t bytes) override { move(device_, host_, bytes, cudaMemcpyHostToDevice); }
  void to_host(std::size_t bytes) override { move(host_, device_, bytes, cudaMemcpyDeviceToHost); }

 private:
  void move(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) {
    DSGD_ENFORCE(bytes <= bytes_, "swap copy larger than the swap area");
    if (bytes == 0) return;
    context_->activate();  // this thread may not have used the device yet
    check(cudaMemcpyAsync(to, from, bytes, kind, stream_), "cudaMemcpyAsync (swap area)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (swap area)");
  }
  void release() {  // statuses ignored: from the destructor or a failed constructor
    cudaSetDevice(context_->device());
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (device_ != nullptr) cudaFree(device_);
    if (host_ != nullptr) cudaFreeHost(host_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    device_ = host_ = nullptr;
    stream_ = nullptr;
  }

  std::shared_ptr<Context> context_;
  std::size_t bytes_;
  cudaStream_t stream_ = nullptr;
  void* host_ = nullptr;
  void* device_ = nullptr;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options)
      : context_(std::make_shared<Context>(options.device, options.seed)), description_(describe(*context_)) {}

  std::string_view name() const override { return "cuda"; }
  std::string description() const override { return description_; }

  float* allocate(std::size_t count) override {
    if (count == 0) return nullptr;
    context_->activate();
    const std::size_t bytes = count * sizeof(float);
    void* data = nullptr;
    check(cudaMalloc(&data, bytes),
          "cudaMalloc of " + std::to_string(bytes) + " bytes on device " + std::to_string(context_->device()));
    // Zeroed on the stream, so every later use (all on the same stream) sees zeros.
    const cudaError_t status = cudaMemsetAsync(data, 0, bytes, context_->stream());
    if (status != cudaSuccess) {
      cudaFree(data);
      check(status, "cudaMemsetAsync");
    }
    return static_cast<float*>(data);
  }

  void release(float* data) override {
    if (data == nullptr) return;
    // Statuses ignored: release runs from destructors (Network's), and a failed free leaves nothing to recover.
    // Queued work may still use the memory, so the stream drains first.
    cudaSetDevice(context_->device());
    cudaStreamSynchronize(context_->stream());
    cudaFree(data);
  }

  void copy_to_device(float* device, const float* host, std::size_t count) override {
    copy_across(device, host, count, cudaMemcpyHostToDevice, "cudaMemcpyAsync to the device");
  }

  void copy_to_host(float* host, const float* device, std::size_t count) override {
    copy_across(host, device, count, cudaMemcpyDeviceToHost, "cudaMemcpyAsync to the host");
  }

  void copy(float* destination, const float* source, std::size_t count) override {
    if (count == 0 || destination == source) return;
    context_->activate();
    check(cudaMemcpyAsync(destination, source, count * sizeof(float), cudaMemcpyDeviceToDevice, context_->stream()),
          "cudaMemcpyAsync on the device");
  }

  void synchronize() override {
    context_->activate();
    context_->synchronize();
  }

  std::unique_ptr<nn::SwapArea> make_swap_area(std::size_t bytes) override {
    return std::make_unique<CudaSwapArea>(context_, bytes);
  }

  std::unique_ptr<Layer> create_layer(const LayerSpec& spec, int batch) override {
    context_->activate();
    return create_layer_from("cuda", makers_, spec, batch);
  }

  void axpby(float a, const float* x, float b, float* y, std::size_t n) override {
    context_->activate();
    check(launch_axpby(a, x, b, y, n, context_->stream()), "axpby kernel");
  }

  double sum_of_squares(const float* x, std::size_t n) override {
    context_->activate();
    // cuBLAS's dot product of x with itself (deterministic on one device, its documented default), blocking with
    // the handle's host pointer mode: the sum of squares itself. Snrm2's norm squared is not: its square root and
    // square lost the last bit (14 came back as 13.999999, seen on an H100). It takes an int count, so larger
    // vectors go in pieces, summed in order.
    constexpr std::size_t kPiece = 1U << 30;
    double total = 0;
    for (std::size_t offset = 0; offset < n; offset += kPiece) {
      const auto count = static_cast<int>(std::min(kPiece, n - offset));
      float squares = 0;
      check(cublas_library().sdot(context_->cublas(), count, x + offset, 1, x + offset, 1, &squares), "cublasSdot");
      total += static_cast<double>(squares);
    }
    return total;
  }

  double softmax_cross_entropy(const float* logits, const float* labels, int batch, int classes, float* grad_logits,
                               int* correct) override {
    DSGD_ENFORCE_GT(batch, 0);
    DSGD_ENFORCE_GT(classes, 0);
    context_->activate();
    const auto rows = static_cast<std::size_t>(batch);
    // Per-row losses and hits in one buffer: batch floats, then batch ints (the same size as floats).
    static_assert(sizeof(int) == sizeof(float));
    if (row_results_.count() < 2 * rows) row_results_ = DeviceBuffer(*context_, 2 * rows);
    float* loss_rows = row_results_.get();
    int* correct_rows = reinterpret_cast<int*>(row_results_.get() + rows);
    check(launch_softmax_cross_entropy(logits, labels, batch, classes, 1.0f / static_cast<float>(batch), grad_logits,
                                       loss_rows, correct_rows, context_->stream()),
          "softmax cross-entropy kernel");
    std::vector<float> loss(rows);
    std::vector<int> hits(rows);
    check(cudaMemcpyAsync(loss.data(), loss_rows, rows * sizeof(float), cudaMemcpyDeviceToHost, context_->stream()),
          "cudaMemcpyAsync (row losses)");
    check(cudaMemcpyAsync(hits.data(), correct_rows, rows * sizeof(int), cudaMemcpyDeviceToHost, context_->stream()),
          "cudaMemcpyAsync (row hits)");
    context_->synchronize();
    // Summed on the host in row order and in double: deterministic, and as the CPU back end sums.
    double loss_sum = 0;
    int right = 0;
    for (std::size_t row = 0; row < rows; ++row) {
      if (hits[row] < 0) {
        float label_value = 0;
        check(cudaMemcpy(&label_value, labels + row, sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy (a label)");
        throw InputError("softmax cross-entropy: label " + std::to_string(label_value) + " of row " +
                         std::to_string(row) + " is not a class index in [0, " + std::to_string(classes) + ")");
      }
      loss_sum += static_cast<double>(loss[row]);
      right += hits[row];
    }
    if (correct != nullptr) *correct = right;
    return loss_sum / batch;
  }

 private:
  // A transfer between host and device. Blocking, so the caller may reuse its host buffer at once and knows the
  // transfer is paid for when this returns.
  void copy_across(float* destination, const float* source, std::size_t count, cudaMemcpyKind kind,
                   std::string_view what) {
    if (count == 0) return;
    context_->activate();
    check(cudaMemcpyAsync(destination, source, count * sizeof(float), kind, context_->stream()), what);
    context_->synchronize();
  }

  std::shared_ptr<Context> context_;
  // After context_, which the makers are bound to.
  LayerMakers makers_ = bind_layer_makers(context_, make_convolution, make_pooling, make_relu, make_lrn,
                                          make_batch_norm, make_inner_product, make_dropout, make_softmax);
  std::string description_;
  DeviceBuffer row_results_;  // softmax_cross_entropy's per-row results; grows with the largest batch seen
};

}  // namespace
}  // namespace cuda

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: an error code rather than 0 devices; clear it
    return 0;
  }
  return count;
}

bool cuda_backend_available() { return cuda_device_count() > 0; }

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw UnavailableError(
        std::string("cuda back end: no usable CUDA device on this machine, no GPU or no NVIDIA driver "
                    "(cudaGetDeviceCount: ") +
        cudaGetErrorString(status) + "); the cpu back end runs everywhere");
  }
  if (count == 0) {
    throw UnavailableError("cuda back end: no CUDA device on this machine; the cpu back end runs everywhere");
  }
  if (options.device < 0 || options.device >= count) {
    throw UnavailableError("cuda back end: there is no CUDA device " + std::to_string(options.device) +
                           " on this machine; valid devices are 0.." + std::to_string(count - 1));
  }
  return std::make_unique<cuda::CudaBackend>(options);
}

}  // namespace dsgd::nn
