// The "cuda" back end's own kernels (kernels.hpp). Compiled by nvcc as CUDA C++17: it includes no dsgd header that
// needs C++20, and core/nn/random.hpp's constexpr functions are called from device code (--expt-relaxed-constexpr),
// so dropout draws the same numbers as the CPU back end from one definition.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/nn/cuda/kernels.hpp"
#include "core/nn/random.hpp"

namespace dsgd::nn::cuda {
namespace {

constexpr unsigned kThreads = 256;         // per block, element-wise kernels
constexpr std::size_t kMaxBlocks = 65535;  // grid-stride loops cover larger tensors
constexpr int kRowThreads = 256;           // per row of the softmax: a power of two for the tree reductions

unsigned blocks_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Grid-stride loop bounds in 64 bits: a batch of VGG activations comes within a factor of 3 of 2^31 elements.
__device__ std::size_t first_index() { return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

__global__ void fill_kernel(float* data, float value, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) data[i] = value;
}

__global__ void axpby_kernel(float a, const float* x, float b, float* y, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) y[i] = a * x[i] + b * y[i];
}

__global__ void scale_kernel(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) y[i] = a * x[i];
}

// Keeps the better of two arg-max candidates: the larger value, on a tie the smaller index (the first maximum, which
// the CPU back end's strict `>` scan finds). Index -1 marks "no candidate yet".
__device__ void keep_better(float& value, int& index, float other_value, int other_index) {
  if (other_index < 0) return;
  if (index < 0 || other_value > value || (other_value == value && other_index < index)) {
    value = other_value;
    index = other_index;
  }
}

__global__ void softmax_cross_entropy_kernel(const float* logits, const float* labels, int classes, float grad_scale,
                                             float* grad, float* loss, int* correct) {
  __shared__ float values[kRowThreads];
  __shared__ int indices[kRowThreads];
  const int row = static_cast<int>(blockIdx.x);
  const int tid = static_cast<int>(threadIdx.x);
  const std::size_t offset = static_cast<std::size_t>(row) * static_cast<std::size_t>(classes);
  const float* x = logits + offset;
  float* g = grad != nullptr ? grad + offset : nullptr;

  // Every thread reads the label, so the block agrees on its validity without a barrier.
  const float label_value = labels[row];
  if (!(label_value >= 0.0f && label_value < static_cast<float>(classes) && floorf(label_value) == label_value)) {
    if (g != nullptr) {
      for (int c = tid; c < classes; c += kRowThreads) g[c] = 0.0f;
    }
    if (tid == 0) {
      loss[row] = 0.0f;
      correct[row] = -1;
    }
    return;
  }
  const int label = static_cast<int>(label_value);
  // Read before any thread writes the gradient, which may overwrite the logits in place.
  const float label_logit = x[label];

  // Phase 1: the row's maximum and the first index holding it.
  float best = 0.0f;
  int best_index = -1;
  for (int c = tid; c < classes; c += kRowThreads) keep_better(best, best_index, x[c], c);
  values[tid] = best;
  indices[tid] = best_index;
  __syncthreads();
  for (int half = kRowThreads / 2; half > 0; half /= 2) {
    if (tid < half) {
      float value = values[tid];
      int index = indices[tid];
      keep_better(value, index, values[tid + half], indices[tid + half]);
      values[tid] = value;
      indices[tid] = index;
    }
    __syncthreads();
  }
  const float max = values[0];
  const int arg_max = indices[0];
  __syncthreads();  // every thread has read the maximum before phase 2 reuses `values`

  // Phase 2: the softmax denominator, sum of exp(x - max) (each term <= 1, so no overflow).
  float partial = 0.0f;
  for (int c = tid; c < classes; c += kRowThreads) partial += expf(x[c] - max);
  values[tid] = partial;
  __syncthreads();
  for (int half = kRowThreads / 2; half > 0; half /= 2) {
    if (tid < half) values[tid] += values[tid + half];
    __syncthreads();
  }
  const float sum = values[0];

  // Phase 3: the row's loss and, element by element, the gradient (each thread rewrites only what it read).
  if (tid == 0) {
    loss[row] = logf(sum) - (label_logit - max);
    correct[row] = arg_max == label ? 1 : 0;
  }
  if (g != nullptr) {
    const float inverse_sum = 1.0f / sum;
    for (int c = tid; c < classes; c += kRowThreads) {
      const float p = expf(x[c] - max) * inverse_sum;
      g[c] = (p - (c == label ? 1.0f : 0.0f)) * grad_scale;
    }
  }
}

__global__ void dropout_kernel(const float* in, float* out, std::size_t n, std::uint64_t random_stream,
                               float drop_probability, float scale) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const bool keep = unit_float(random_bits(random_stream, static_cast<std::uint64_t>(i))) >= drop_probability;
    // A multiply by the mask value, exactly as the CPU back end computes it.
    out[i] = in[i] * (keep ? scale : 0.0f);
  }
}

__global__ void pad_planes_kernel(const float* in, float* out, std::size_t total, int height, int width,
                                  int padded_height, int padded_width, float fill) {
  const std::size_t plane = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  const std::size_t padded_plane = static_cast<std::size_t>(padded_height) * static_cast<std::size_t>(padded_width);
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    const std::size_t p = i / padded_plane;
    const std::size_t r = i % padded_plane;
    const auto y = static_cast<int>(r / static_cast<std::size_t>(padded_width));
    const auto x = static_cast<int>(r % static_cast<std::size_t>(padded_width));
    out[i] = (y < height && x < width) ? in[p * plane + static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                                            static_cast<std::size_t>(x)]
                                       : fill;
  }
}

__global__ void crop_planes_kernel(const float* in, float* out, std::size_t total, int padded_height, int padded_width,
                                   int height, int width) {
  const std::size_t plane = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  const std::size_t padded_plane = static_cast<std::size_t>(padded_height) * static_cast<std::size_t>(padded_width);
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    const std::size_t p = i / plane;
    const std::size_t r = i % plane;
    const std::size_t y = r / static_cast<std::size_t>(width);
    const std::size_t x = r % static_cast<std::size_t>(width);
    out[i] = in[p * padded_plane + y * static_cast<std::size_t>(padded_width) + x];
  }
}

__global__ void scale_planes_kernel(const float* in, float* out, const float* factors, std::size_t total,
                                    std::size_t plane_size) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) out[i] = in[i] * factors[i % plane_size];
}

}  // namespace

cudaError_t launch_fill(float* data, float value, std::size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(data, value, n);
  return cudaGetLastError();
}

cudaError_t launch_axpby(float a, const float* x, float b, float* y, std::size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (b == 0.0f) {
    scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, x, y, n);
  } else {
    axpby_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, x, b, y, n);
  }
  return cudaGetLastError();
}

cudaError_t launch_softmax_cross_entropy(const float* logits, const float* labels, int rows, int classes,
                                         float grad_scale, float* grad, float* loss, int* correct,
                                         cudaStream_t stream) {
  if (rows <= 0 || classes <= 0) return cudaSuccess;
  softmax_cross_entropy_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
      logits, labels, classes, grad_scale, grad, loss, correct);
  return cudaGetLastError();
}

cudaError_t launch_dropout(const float* in, float* out, std::size_t n, std::uint64_t random_stream,
                           float drop_probability, float scale, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  dropout_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, out, n, random_stream, drop_probability, scale);
  return cudaGetLastError();
}

cudaError_t launch_pad_planes(const float* in, float* out, std::size_t planes, int height, int width, int padded_height,
                              int padded_width, float fill, cudaStream_t stream) {
  const std::size_t total = planes * static_cast<std::size_t>(padded_height) * static_cast<std::size_t>(padded_width);
  if (total == 0) return cudaSuccess;
  pad_planes_kernel<<<blocks_for(total), kThreads, 0, stream>>>(in, out, total, height, width, padded_height,
                                                                padded_width, fill);
  return cudaGetLastError();
}

cudaError_t launch_crop_planes(const float* in, float* out, std::size_t planes, int padded_height, int padded_width,
                               int height, int width, cudaStream_t stream) {
  const std::size_t total = planes * static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  if (total == 0) return cudaSuccess;
  crop_planes_kernel<<<blocks_for(total), kThreads, 0, stream>>>(in, out, total, padded_height, padded_width, height,
                                                                 width);
  return cudaGetLastError();
}

cudaError_t launch_scale_planes(const float* in, float* out, const float* factors, std::size_t planes,
                                std::size_t plane_size, cudaStream_t stream) {
  const std::size_t total = planes * plane_size;
  if (total == 0) return cudaSuccess;
  scale_planes_kernel<<<blocks_for(total), kThreads, 0, stream>>>(in, out, factors, total, plane_size);
  return cudaGetLastError();
}

}  // namespace dsgd::nn::cuda
