#pragma once
// Why a benchmark's numbers may not be this machine's: other programs kept cores busy while it measured, or a
// measurement came out above the physical bound it cannot pass (a kernel above the roofline). Benchmarks print
// these as "warning: ..." lines beside their tables and keep them in their results (label "suspect").

#include <string>
#include <vector>

#include "reports/results.hpp"

namespace dsgd::measure {

// Other programs' cores (background_load.hpp's CpuClock) above which a measurement is flagged: a quarter of a core
// on average slows a two-rank run on two cores measurably (docs/validation.md, "Several runs a row").
inline constexpr double kBusyCores = 0.25;

// "warning: other programs kept 1.02 cores busy while this measured: ..." or "" below kBusyCores.
std::string busy_machine_warning(double others_cores);

// "warning: WHAT measured 1.2e+11 UNIT, 8% above BOUND (1.11e+11 UNIT): ..." or "" within 5% of the bound (the
// bound's own measurement error).
std::string above_bound_warning(const std::string& what, double measured, double bound, const std::string& bound_name,
                                const std::string& unit);

// Labels every entry "suspect" with `why` (one of the warnings above); nothing where `why` is empty.
void mark_suspect(std::vector<reports::Entry>& entries, const std::string& why);

}  // namespace dsgd::measure
