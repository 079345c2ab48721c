#pragma once
// NaN in, NaN out, as IEEE says and cuDNN does with CUDNN_PROPAGATE_NAN: oneDNN's ReLU turns a NaN into 0 and its
// max pooling takes a window's largest number past a NaN, so diverged weights would hide behind a finite loss
// (issue 42). Called after the primitive, they cost one read of the input and write only where a NaN is.

#include <cstddef>

#include "core/model_zoo.hpp"

namespace dsgd::nn::cpu {

// out[i] = in[i] wherever in[i] is NaN.
void propagate_nan_elementwise(const float* in, float* out, std::size_t count);
// Every output of max pooling layer `spec` over `batch` NCHW images whose window holds a NaN becomes NaN.
void propagate_nan_max_pool(const float* in, float* out, int batch, const LayerSpec& spec);

}  // namespace dsgd::nn::cpu
