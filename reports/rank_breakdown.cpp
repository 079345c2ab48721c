#include "reports/rank_breakdown.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "reports/table.hpp"

namespace dsgd::reports {

namespace {

// Shortest round-trip text rather than %.9g, so a reader gets back the very doubles the run measured.
std::string seconds_text(double seconds) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), seconds + 0.0);
  return std::string(buffer.data(), result.ptr);
}

}  // namespace

void write_rank_breakdown_csv(const std::filesystem::path& path, std::span<const Breakdown> per_rank) {
  Table table;
  table.columns.push_back({"rank", Align::kRight});
  for (const auto name : kCategoryNames) table.columns.push_back({std::string(name), Align::kRight});
  table.columns.push_back({"total_s", Align::kRight});

  for (std::size_t rank = 0; rank < per_rank.size(); ++rank) {
    const Breakdown& breakdown = per_rank[rank];
    std::vector<std::string> row = {std::to_string(rank)};
    for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
      if (!std::isfinite(breakdown.seconds[i])) {
        throw InputError(path.string() + ": rank " + std::to_string(rank) + " breakdown \"" +
                         std::string(kCategoryNames[i]) + "\" is " + std::to_string(breakdown.seconds[i]) +
                         "; expected a finite number of seconds");
      }
      row.push_back(seconds_text(breakdown.seconds[i]));
    }
    row.push_back(seconds_text(breakdown.total()));
    table.add_row(std::move(row));
  }
  write_file_atomically(path, to_csv(table));
}

}  // namespace dsgd::reports
