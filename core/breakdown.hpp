#pragma once
// The time-breakdown categories of seed 000 Table 3, shared by native and simulated runs (DESIGN.md "Time
// breakdown"). On a CPU-only run "gpu" means the worker device and "cpu" the master.

#include <array>
#include <optional>
#include <string_view>

namespace dsgd {

enum class Category {
  kGpuGpuPara,   // worker-worker parameter exchange
  kCpuGpuData,   // copying a batch of samples to the worker device
  kCpuGpuPara,   // master-worker parameter exchange
  kForwardBackward,
  kGpuUpdate,    // weight update on the worker device
  kCpuUpdate,    // weight update on the master
  kNetwork,      // between nodes
  kWait,         // idle, blocked on a peer
};

inline constexpr std::array<std::string_view, 8> kCategoryNames = {
    "gpu-gpu para", "cpu-gpu data", "cpu-gpu para", "for/backward", "gpu update", "cpu update", "network", "wait"};

constexpr std::string_view to_string(Category category) { return kCategoryNames[static_cast<std::size_t>(category)]; }

// The category named `name`, if any.
constexpr std::optional<Category> category_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    if (kCategoryNames[i] == name) return static_cast<Category>(i);
  }
  return std::nullopt;
}

// Communication categories count toward seed 000's "comm ratio"; the rest is computation or waiting.
constexpr bool is_communication(Category category) {
  return category == Category::kGpuGpuPara || category == Category::kCpuGpuData ||
         category == Category::kCpuGpuPara || category == Category::kNetwork;
}

}  // namespace dsgd
