#pragma once
// The results entry of one row of seed 002's lost-update experiment (lost_updates.hpp), built beside the
// measurement: executor threads, ranks the thread count, real_time the median run and cpu_time its threads' CPU
// seconds; the label variant and counters of the sizes, the lost additions (all runs, and the fewest and most in one
// run), the rate and the parallelism (docs/lost-updates.md).

#include "measure/lost_updates.hpp"
#include "reports/results.hpp"

namespace dsgd::measure {

// Named "lost_updates/VARIANT/THREADS/FLOATS", one iteration per run of the row.
reports::Entry to_entry(const LostUpdateRow& row);

}  // namespace dsgd::measure
