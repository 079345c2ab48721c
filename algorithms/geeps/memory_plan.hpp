#pragma once
// GeePS's GPU memory management (seed 003; Cui et al., EuroSys '16; docs/geeps.md): training is iterative, so one
// "virtual" iteration records which buffers each step (a layer's forward or backward pass) touches, and a
// background thread then moves buffers between host and device ahead of their use. When every buffer fits in the
// device's memory they all stay there; otherwise a pool of device memory holds the current step's buffers and the
// next step's (prefetched while the current one computes), and the buffer whose next use is farthest away leaves
// first (Belady's rule: the access pattern is known). A buffer whose next use only writes it is dead: it leaves
// without going back to the host and is made on the device without coming from it (an activation's gradient after
// its last reader). This plans that movement for one steady-state iteration.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_zoo.hpp"

namespace dsgd::algorithms::geeps {

struct Buffer {
  std::string name;
  std::uint64_t bytes = 0;
};

// What a step touches: buffers it reads, and buffers it writes (they must go back to the host if evicted later).
struct Step {
  std::string name;
  std::vector<std::uint32_t> reads;
  std::vector<std::uint32_t> writes;
};

// One iteration's steps in order; the next iteration repeats them.
struct AccessPattern {
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
};

struct Transfer {
  std::uint32_t buffer = 0;
  std::uint64_t bytes = 0;
};

// What the background thread does while a step runs.
struct StepPlan {
  std::vector<Transfer> to_device;   // the next step's buffers it lacks (prefetch), and this step's if it lacks any
  std::vector<Transfer> to_host;     // written, live buffers evicted to make room (a clean or dead one is dropped)
  std::uint64_t stalled_bytes = 0;   // what this step reads and lacks when it starts: it waits for them
  std::uint64_t resident_bytes = 0;  // on the device while the step runs, prefetched buffers included
};

struct MemoryPlan {
  bool fits = false;  // everything stays resident: no transfers after the first iteration
  std::vector<StepPlan> steps;
  std::uint64_t peak_bytes = 0;
  std::uint64_t to_device_bytes = 0;  // per steady-state iteration
  std::uint64_t to_host_bytes = 0;
};

// The access pattern of one training iteration of `model` at `batch` images, as GeePS's virtual iteration records
// it. Buffers: the input batch; per layer with parameters, its parameters; per layer, its output and the gradient
// of that output (fp32, `batch` images). Forward through the layers in order: layer i reads its parameters and its
// inputs' outputs (the batch for the first) and writes its output. Backward in reverse: layer i reads its
// parameters, its inputs' outputs and its output's gradient, and writes its inputs' gradients and its parameters
// (the update). Throws InputError for a batch below 1.
AccessPattern virtual_iteration(const ModelSpec& model, std::int64_t batch);

// The bytes of all of `pattern`'s buffers: what the device needs to keep them all.
std::uint64_t buffer_bytes(const AccessPattern& pattern);

// The steady-state plan of `pattern` on a device with `device_bytes` for it. Throws InputError naming the step
// whose own buffers exceed the device, and for a step naming a buffer that does not exist.
MemoryPlan plan_memory(const AccessPattern& pattern, std::uint64_t device_bytes);

}  // namespace dsgd::algorithms::geeps
