#pragma once
// Measured kernel times, layer by layer (docs/simulation.md "Kernel profiles"): what a simulation charges for a
// kernel the profile covers, in place of the kernel model's or the kernel class's price. Written by `dsgd calibrate
// --layers` (this machine's native kernels at several batches and thread counts) or read from a PyTorch profiler
// trace (`dsgd calibrate --torch-trace`); a platform's CPU or device group holds one as `kernel_profile`.
//
// A kernel is (model, layer, phase, threads); its points are times at measured batch sizes. Between two measured
// batches the time is interpolated linearly (a kernel's time is close to affine in its batch: a fixed cost plus
// work per image); outside them the profile does not cover the kernel, and the model prices it.

#include <compare>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "platforms/platform.hpp"

namespace dsgd::platforms {

// What a profiled time covers of a layer's training work. Frameworks time a layer's backward as one function (its
// input's and its weights' gradients together): "backward"; a profile may also give the two apart.
enum class ProfilePhase { kForward, kBackward, kBackwardData, kBackwardWeights };
std::string_view to_string(ProfilePhase phase);
// Throws UnknownNameError listing the phases.
ProfilePhase profile_phase_from_string(std::string_view name);

struct ProfilePoint {
  std::int64_t batch = 0;
  double seconds = 0;
  bool operator==(const ProfilePoint&) const = default;
};

struct ProfileKey {
  std::string model;
  std::string layer;
  ProfilePhase phase = ProfilePhase::kForward;
  int threads = 0;  // CPU threads the kernel ran on; 0 for a device (a GPU's kernels)
  auto operator<=>(const ProfileKey&) const = default;
};

class KernelProfile {
 public:
  std::string device;  // what ran the kernels: "Intel Xeon ... (cpu back end: oneDNN ..., 1 thread)"
  std::string source;  // how they were timed: "measured by dsgd calibrate --layers on HOST, DATE, median of 20"

  // Adds (or replaces) the time of `key` at `batch`. Throws InputError for a batch < 1, a time that is not
  // positive and finite, or a key without model or layer name.
  void add(const ProfileKey& key, std::int64_t batch, double seconds);

  // The time of `key` at `batch`: measured, or interpolated between the two measured batches around it; empty
  // where the profile has no such kernel or the batch lies outside its measured ones.
  std::optional<double> seconds(const ProfileKey& key, std::int64_t batch) const;

  // Each kernel's points, by ascending batch.
  const std::map<ProfileKey, std::vector<ProfilePoint>>& kernels() const { return kernels_; }
  bool empty() const { return kernels_.empty(); }
  bool operator==(const KernelProfile&) const = default;

 private:
  std::map<ProfileKey, std::vector<ProfilePoint>> kernels_;
};

// The JSON form (docs/platform-schema.md "kernel_profile"):
//   {"device": ..., "source": ..., "kernels": [{"model": "lenet", "layer": "conv1", "phase": "forward",
//     "threads": 1, "points": [[1, 2.1e-5], [16, 2.4e-4], ...]}, ...]}
// Points are [batch, seconds]. Throws InputError naming the file and field for anything else (a repeated
// kernel or batch, a time that is not positive, more than kMaxProfileKernels kernels).
inline constexpr std::size_t kMaxProfileKernels = 100000;
KernelProfile parse_kernel_profile(const JsonView& view);
Json to_json(const KernelProfile& profile);
// Reads and parses a profile file (bounded as every input file is: core/json.hpp).
KernelProfile load_kernel_profile(const std::filesystem::path& path);

// Gives `profile` to the processors `platform`'s ranks compute on: its device groups where its nodes have devices,
// else its CPU (replacing a profile they held).
void attach_kernel_profile(Platform& platform, std::shared_ptr<const KernelProfile> profile);

}  // namespace dsgd::platforms
