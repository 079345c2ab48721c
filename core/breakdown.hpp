#pragma once
// The time-breakdown categories of seed 000 Table 3, shared by native and simulated runs (docs/design.md "Time
// breakdown"). On a CPU-only run "gpu" means the worker device and "cpu" the master.

#include <array>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace dsgd {

enum class Category {
  kGpuGpuPara,  // worker-worker parameter exchange
  kCpuGpuData,  // copying a batch of samples to the worker device
  kCpuGpuPara,  // master-worker parameter exchange
  kForwardBackward,
  kGpuUpdate,  // weight update on the worker device
  kCpuUpdate,  // weight update on the master
  kNetwork,    // between nodes
  kWait,       // idle, blocked on a peer
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
  return category == Category::kGpuGpuPara || category == Category::kCpuGpuData || category == Category::kCpuGpuPara ||
         category == Category::kNetwork;
}

// Time per category, in the executor's seconds.
struct Breakdown {
  std::array<double, kCategoryNames.size()> seconds{};
  // A breakdown of the given seconds per category: Breakdown::of({{Category::kWait, 2}, ...}).
  static Breakdown of(std::initializer_list<std::pair<Category, double>> spent) {
    Breakdown out;
    for (const auto& [category, s] : spent) out.add(category, s);
    return out;
  }
  void add(Category category, double s) { seconds[static_cast<std::size_t>(category)] += s; }
  double operator[](Category category) const { return seconds[static_cast<std::size_t>(category)]; }
  double total() const;
};

// The mean over ranks of each category's seconds (all zero for no ranks).
Breakdown mean_breakdown(std::span<const Breakdown> per_rank);

// One span of a rank's timeline: `duration_s` seconds charged to `category`, starting `start_s` after the run began
// (the Chrome trace of reports/trace.hpp is written from these).
struct TimelineSpan {
  int rank = 0;
  Category category = Category::kWait;
  double start_s = 0;
  double duration_s = 0;
};

// Seed 000 Table 3's breakdown of one run, the one definition for measured runs, studies and simulations.
struct Table3Shares {
  Breakdown shares;       // each category's fraction of busy_s (wait: 0)
  double comm_ratio = 0;  // the communication categories' fraction of busy_s
  double busy_s = 0;      // the denominator: a worker's time without `wait`, plus the master's cpu update
  double wait_s = 0;      // the worker's `wait`, left out of the shares (a run reports it beside them)
};

// The shares of a run whose ranks spent `per_rank`: the first worker's (rank 1 where rank 0 is a master, else rank
// 0) time per category without `wait` -- seed 000 has no idle category, and blocking inside a transfer is charged
// to the transfer -- plus the master's cpu update, as the seed reports one breakdown per method. The comm ratio
// counts every communication category (is_communication: network too). All zero when nothing was busy. Throws
// InternalError when per_rank holds no worker.
Table3Shares table3_shares(std::span<const Breakdown> per_rank, bool has_master);

}  // namespace dsgd
