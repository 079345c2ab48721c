#pragma once
// A kernel profile (platforms/kernel_profile.hpp) from a PyTorch profiler trace of one training iteration: the
// way users of this field already capture their kernel times (docs/simulation.md "Kernel profiles").
//
// Both Chrome-trace forms torch.profiler's export_chrome_trace writes are read: Kineto's ({"traceEvents": [...]})
// and, where PyTorch was built without Kineto (Debian's python3-torch), the autograd profiler's (a bare array).
// Of the complete events ("ph": "X"), the top-level operators of each thread are matched to the model's layers by
// order and kind: forward operators (aten::conv2d, aten::max_pool2d, aten::linear, aten::relu, ...) first layer
// first, then the autograd engine's backward functions (ConvolutionBackward0, AddmmBackward0, ...) last layer
// first. A layer's parameter bookkeeping (AccumulateGrad, TBackward0) counts toward its backward; operators no
// layer stands for (flatten, the optimizer, the profiler's own) are left out. A layer the trace does not show keeps
// no time and the kernel model prices it.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/model_zoo.hpp"
#include "platforms/kernel_profile.hpp"

namespace dsgd::platforms {

struct TraceProfile {
  KernelProfile profile;
  std::vector<std::string> unmatched;  // "conv1 backward": kernels of the model the trace did not show
};

// The profile of `model`'s layers at `batch` images and `threads` CPU threads from the trace `json` read from
// `source`. Throws InputError naming `source` and the event for a malformed trace (not an array or
// {"traceEvents": [...]}, an event without a name or with a negative or non-finite time), for threads < 1 (a GPU
// trace's kernel times are on its device streams, which this reader does not follow yet) and for a trace in which
// no layer was found.
TraceProfile profile_from_torch_trace(const Json& json, const std::string& source, const ModelSpec& model,
                                      std::int64_t batch, int threads);
// The same from a trace file (bounded as every input file is: core/json.hpp).
TraceProfile profile_from_torch_trace(const std::filesystem::path& path, const ModelSpec& model, std::int64_t batch,
                                      int threads);

}  // namespace dsgd::platforms
