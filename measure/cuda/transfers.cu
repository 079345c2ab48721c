// The CUDA copies of measure/transports.hpp. Compiled only with DSGD_WITH_CUDA.
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "measure/transports.hpp"

namespace dsgd::measure {

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(std::string("transports: ") + what + ": " + cudaGetErrorString(status));
}

enum class Kind { kH2dPageable, kH2dPinned, kD2hPageable, kD2hPinned, kD2d, kPeer };

// Buffers for one kind of copy, and CUDA events around each copy on the device's default stream.
class CudaCopy final : public TransportCopy {
 public:
  CudaCopy(Kind kind, std::size_t bytes) : kind_(kind), bytes_(bytes) {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaMalloc(&device_, bytes), "cudaMalloc");
    if (kind == Kind::kH2dPinned || kind == Kind::kD2hPinned) {
      check(cudaMallocHost(&host_, bytes), "cudaMallocHost");
    } else if (kind == Kind::kH2dPageable || kind == Kind::kD2hPageable) {
      host_ = std::malloc(bytes);
      if (host_ == nullptr) throw Error("transports: out of host memory for " + std::to_string(bytes) + " bytes");
      pageable_ = true;
    } else if (kind == Kind::kD2d) {
      check(cudaMalloc(&other_, bytes), "cudaMalloc");
    } else {
      check(cudaSetDevice(1), "cudaSetDevice(1)");
      check(cudaMalloc(&other_, bytes), "cudaMalloc on device 1");
      check(cudaSetDevice(0), "cudaSetDevice");
    }
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~CudaCopy() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaFree(device_);
    if (other_ != nullptr) cudaFree(other_);
    if (pageable_) {
      std::free(host_);
    } else if (host_ != nullptr) {
      cudaFreeHost(host_);
    }
  }

  double copy_once() override {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaEventRecord(start_), "cudaEventRecord");
    switch (kind_) {
      case Kind::kH2dPageable:
      case Kind::kH2dPinned:
        check(cudaMemcpy(device_, host_, bytes_, cudaMemcpyHostToDevice), "cudaMemcpy host to device");
        break;
      case Kind::kD2hPageable:
      case Kind::kD2hPinned:
        check(cudaMemcpy(host_, device_, bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy device to host");
        break;
      case Kind::kD2d:
        check(cudaMemcpy(other_, device_, bytes_, cudaMemcpyDeviceToDevice), "cudaMemcpy device to device");
        break;
      case Kind::kPeer:
        check(cudaMemcpyPeer(other_, 1, device_, 0, bytes_), "cudaMemcpyPeer");
        break;
    }
    check(cudaEventRecord(stop_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  Kind kind_;
  std::size_t bytes_;
  void* device_ = nullptr;
  void* other_ = nullptr;
  void* host_ = nullptr;
  bool pageable_ = false;
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

Transport cuda_transport(const char* name, const std::string& description, Kind kind) {
  return {name, description, [kind](std::size_t bytes) { return std::make_unique<CudaCopy>(kind, bytes); }};
}

}  // namespace

std::vector<Transport> cuda_transports() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // no driver or no GPU
    return {};
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const std::string gpu = std::string(prop.name);
  std::vector<Transport> transports = {
      cuda_transport("cuda-h2d-pageable", "host (malloc) to " + gpu + ", cudaMemcpy", Kind::kH2dPageable),
      cuda_transport("cuda-h2d-pinned", "host (cudaMallocHost) to " + gpu + ", cudaMemcpy", Kind::kH2dPinned),
      cuda_transport("cuda-d2h-pageable", gpu + " to host (malloc), cudaMemcpy", Kind::kD2hPageable),
      cuda_transport("cuda-d2h-pinned", gpu + " to host (cudaMallocHost), cudaMemcpy", Kind::kD2hPinned),
      cuda_transport("cuda-d2d", "within " + gpu + ", cudaMemcpy device to device", Kind::kD2d)};
  if (count >= 2) {
    int access = 0;
    cudaDeviceCanAccessPeer(&access, 0, 1);
    if (access != 0) {
      cudaSetDevice(0);
      cudaDeviceEnablePeerAccess(1, 0);
      cudaGetLastError();  // already enabled is fine
    }
    transports.push_back(cuda_transport(
        "cuda-peer",
        std::string("device 0 to device 1, cudaMemcpyPeer") + (access != 0 ? " (peer access)" : " (through the host)"),
        Kind::kPeer));
  }
  return transports;
}

}  // namespace dsgd::measure
