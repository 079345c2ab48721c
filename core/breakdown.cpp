#include "core/breakdown.hpp"

#include <numeric>

#include "core/error.hpp"

namespace dsgd {

double Breakdown::total() const { return std::accumulate(seconds.begin(), seconds.end(), 0.0); }

Breakdown mean_breakdown(std::span<const Breakdown> per_rank) {
  Breakdown mean;
  for (const auto& rank : per_rank) {
    for (std::size_t i = 0; i < mean.seconds.size(); ++i) {
      mean.seconds[i] += rank.seconds[i] / static_cast<double>(per_rank.size());
    }
  }
  return mean;
}

Table3Shares table3_shares(std::span<const Breakdown> per_rank, bool has_master) {
  const std::size_t worker = has_master ? 1 : 0;
  if (worker >= per_rank.size()) throw InternalError("table3_shares: a run without a worker's breakdown");
  Breakdown busy = per_rank[worker];
  Table3Shares out;
  out.wait_s = busy[Category::kWait];
  busy.seconds[static_cast<std::size_t>(Category::kWait)] = 0;
  if (has_master) busy.add(Category::kCpuUpdate, per_rank[0][Category::kCpuUpdate]);
  out.busy_s = busy.total();
  if (out.busy_s <= 0) return out;
  double comm_s = 0;
  for (std::size_t i = 0; i < busy.seconds.size(); ++i) {
    out.shares.seconds[i] = busy.seconds[i] / out.busy_s;
    if (is_communication(static_cast<Category>(i))) comm_s += busy.seconds[i];
  }
  out.comm_ratio = comm_s / out.busy_s;
  return out;
}

}  // namespace dsgd
