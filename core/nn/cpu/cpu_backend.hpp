#pragma once
// The "cpu" back end: oneDNN primitives for convolution, pooling, LRN, ReLU and batch norm, OpenBLAS SGEMM for
// inner products, OpenMP threads for everything else. Memory is plain 64-byte-aligned host memory.

#include <memory>

#include "core/nn/backend.hpp"

namespace dsgd::nn::cpu {

// Makes the CPU back end; BackendOptions::threads = 0 takes every processor OpenMP reports.
std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);

}  // namespace dsgd::nn::cpu
