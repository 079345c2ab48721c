#pragma once
// y <- a*x + y on the GPU: the SGD weight update (W <- W - eta*g) in its plainest form. Also the smallest kernel
// that proves the CUDA back end compiles, links and runs (tests/measure/cuda_axpy_test.cpp).

#include <cstddef>

namespace dsgd::measure::cuda {

// Copies x and y to the device, runs the kernel, copies y back. Throws UnavailableError if no device is usable,
// Error with CUDA's message on any other CUDA failure.
void axpy_host(float a, const float* x, float* y, std::size_t n);

}  // namespace dsgd::measure::cuda
