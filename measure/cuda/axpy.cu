#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"
#include "measure/cuda/axpy.hpp"

namespace dsgd::measure::cuda {

namespace {

__global__ void axpy_kernel(float a, const float* x, float* y, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const std::string message = std::string(what) + ": " + cudaGetErrorString(status);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) throw UnavailableError(message);
  throw Error(message);
}

// Frees device memory on every path out of axpy_host.
struct DeviceBuffer {
  float* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
};

}  // namespace

void axpy_host(float a, const float* x, float* y, std::size_t n) {
  if (n == 0) return;
  DeviceBuffer dx;
  DeviceBuffer dy;
  const std::size_t bytes = n * sizeof(float);
  check(cudaMalloc(&dx.ptr, bytes), "cudaMalloc");
  check(cudaMalloc(&dy.ptr, bytes), "cudaMalloc");
  check(cudaMemcpy(dx.ptr, x, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  check(cudaMemcpy(dy.ptr, y, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  axpy_kernel<<<blocks, kThreads>>>(a, dx.ptr, dy.ptr, n);
  check(cudaGetLastError(), "axpy kernel launch");
  check(cudaMemcpy(y, dy.ptr, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

}  // namespace dsgd::measure::cuda
