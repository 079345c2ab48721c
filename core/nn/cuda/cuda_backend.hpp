#pragma once
// The "cuda" back end (docs/nn-cuda.md): cuDNN and cuBLAS on one CUDA stream per back end, with every tensor and
// the weights resident in device memory (seed 000's Sync EASGD2 idea); host data moves only through
// copy_to_device / copy_to_host. Built only with DSGD_WITH_CUDA.

#include <memory>

#include "core/nn/backend.hpp"

namespace dsgd::nn {

// True when the cuda back end can run here: a CUDA driver and at least one device. Cheap (no context is made).
bool cuda_backend_available();
// The devices the cuda back end can use here: 0 without a driver or a GPU.
int cuda_device_count();

// Makes the cuda back end on device options.device, dropout masks seeded by options.seed (options.threads is
// ignored). Throws UnavailableError when there is no driver, no device, or no device of that index; Error with
// the CUDA, cuDNN or cuBLAS message when the device cannot be set up.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace dsgd::nn
