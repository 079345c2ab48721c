#pragma once
// Every rank's time breakdown as one CSV table, to see load imbalance and stragglers that worker 0's breakdown in
// the results file (docs/results-schema.md) cannot show.

#include <filesystem>
#include <span>

#include "core/comm.hpp"

namespace dsgd::reports {

// Writes `per_rank` (index = rank) to `path` as CSV (RFC 4180, CRLF line ends, via reports/table.hpp), atomically,
// creating parent folders. Header: `rank,<category names in Category order>,total_s`; one row per rank with
// seconds written as the shortest text that reads back as the same double, total_s = Breakdown::total().
// Throws InputError naming the rank and category for a non-finite value, IoError naming the path when the file
// cannot be written; `path` is either replaced whole or left as it was.
void write_rank_breakdown_csv(const std::filesystem::path& path, std::span<const Breakdown> per_rank);

}  // namespace dsgd::reports
