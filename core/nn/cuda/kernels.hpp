#pragma once
// The "cuda" back end's own kernels: what cuDNN and cuBLAS do not provide. Plain C++17 with no dsgd types, so that
// nvcc (kernels.cu, compiled as CUDA C++17) and the C++20 sources both include it. Every function enqueues its work
// on `stream`, synchronizes nothing, and returns the launch status (cudaGetLastError) for the caller to check.
// Sizes of 0 launch nothing and return cudaSuccess.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dsgd::nn::cuda {

// data[i] = value for i < n.
cudaError_t launch_fill(float* data, float value, std::size_t n, cudaStream_t stream);

// y = a * x + b * y over n floats. With b == 0, y is only written, never read (BLAS convention: it may hold NaN).
cudaError_t launch_axpby(float a, const float* x, float b, float* y, std::size_t n, cudaStream_t stream);

// One block per row r of `logits` (rows x classes), label l = labels[r]:
//   loss[r]    = log(sum_c exp(x_c - max)) - (x_l - max)
//   correct[r] = 1 when the first arg-max of the row is l, else 0
//   grad[r][c] = (softmax_c - [c == l]) * grad_scale   (skipped when grad is null; grad may alias logits)
// A label that is not an integer in [0, classes) gives correct[r] = -1, loss[r] = 0 and a zero gradient row, for
// the caller to report.
cudaError_t launch_softmax_cross_entropy(const float* logits, const float* labels, int rows, int classes,
                                         float grad_scale, float* grad, float* loss, int* correct, cudaStream_t stream);

// out[i] = in[i] * (keep(i) ? scale : 0), keep(i) = unit_float(random_bits(random_stream, i)) >= drop_probability
// (core/nn/random.hpp, so the mask equals the CPU back end's bit for bit). Dropout's forward and its backward
// (in = grad_out, out = grad_in) are the same operation on the same mask. out may equal in.
cudaError_t launch_dropout(const float* in, float* out, std::size_t n, std::uint64_t random_stream,
                           float drop_probability, float scale, cudaStream_t stream);

// Copies each of `planes` height x width planes of `in` into the top-left corner of a padded_height x padded_width
// plane of `out` and sets the rest of that plane to `fill` (padded_height >= height, padded_width >= width).
cudaError_t launch_pad_planes(const float* in, float* out, std::size_t planes, int height, int width, int padded_height,
                              int padded_width, float fill, cudaStream_t stream);

// The inverse of launch_pad_planes: the top-left height x width corner of each padded plane of `in`.
cudaError_t launch_crop_planes(const float* in, float* out, std::size_t planes, int padded_height, int padded_width,
                               int height, int width, cudaStream_t stream);

// out[p * plane_size + i] = in[p * plane_size + i] * factors[i] for each of `planes` planes. out may equal in.
cudaError_t launch_scale_planes(const float* in, float* out, const float* factors, std::size_t planes,
                                std::size_t plane_size, cudaStream_t stream);

}  // namespace dsgd::nn::cuda
