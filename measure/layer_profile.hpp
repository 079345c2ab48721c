#pragma once
// A kernel profile of this machine (platforms/kernel_profile.hpp): each layer of a model timed forward and backward
// with the back end's native kernels, as nn::Network runs them, at several batch sizes and thread counts
// (`dsgd calibrate --layers`; docs/simulation.md "Kernel profiles").
//
// Each layer runs alone on seeded buffers of its shapes, its forward before its backward (backward reads what
// forward kept). The first layer computes no input gradient, as in the network. The final softmax is the loss: the
// back end computes it and its gradient in one call, whose time the profile gives half to the layer's forward and
// half to its backward.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/model_zoo.hpp"
#include "platforms/kernel_profile.hpp"

namespace dsgd::nn {
class Backend;
}

namespace dsgd::measure {

struct LayerProfileOptions {
  std::vector<std::string> models{"lenet"};
  std::vector<std::int64_t> batches{1, 16, 64, 256};
  std::vector<int> threads{1, 2};  // OpenMP threads of the back end
  int repetitions = 15;            // timed, per kernel: the profile keeps their median
  int warmup = 2;                  // untimed first runs (page faults, oneDNN primitive creation)
  std::string backend = "cpu";
  std::uint64_t seed = 1;
};

struct LayerProfile {
  platforms::KernelProfile profile;
  double others_cores = 0;  // cores other programs kept busy meanwhile (measure/background_load.hpp)
};

// How one layer is run and timed: the median of `repetitions` runs after `warmup` untimed ones, on buffers of
// values drawn from `seed`.
struct LayerRun {
  int repetitions = 15;
  int warmup = 2;
  std::uint64_t seed = 1;
  bool input_gradient = true;  // false for a layer that reads the model input: its backward computes none
  bool loss = false;           // the network's final softmax: the loss over its input's elements as classes
};

struct LayerSeconds {
  double forward = 0;
  double backward = 0;
  double both() const { return forward + backward; }
};

// The median seconds of `spec`'s forward and backward at `batch` images on `backend`, as the profile times each
// layer. Empty for a layer with no single-input kernel (a concat or add: the network runs it).
std::optional<LayerSeconds> time_layer(nn::Backend& backend, const LayerSpec& spec, std::int64_t batch,
                                       const LayerRun& run);

// Times every layer of every model at every batch and thread count. Progress, one line per (model, batch,
// threads), goes to `err`. Throws InputError for an unknown model, empty lists, a batch or thread count < 1,
// repetitions < 1, more threads than the machine has processors, or a working set that will not fit in memory;
// UnavailableError for a back end that cannot run here.
LayerProfile measure_layer_profile(const LayerProfileOptions& options, const std::string& where, std::ostream& err);

}  // namespace dsgd::measure
