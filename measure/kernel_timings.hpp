#pragma once
// The kernel classes timed on this machine for a calibrated platform (measure/kernel_calibration.hpp): with every
// core busy and, on a machine of several cores, alone as well. `dsgd calibrate` writes them into the platform files;
// `dsgd validate` times them again right before and after each run it predicts, since the machine's speed drifts
// (docs/validation.md, "Kernels timed around each run").

#include <iosfwd>
#include <optional>
#include <string>

#include "measure/kernel_calibration.hpp"
#include "platforms/platform.hpp"

namespace dsgd::measure {

struct KernelTimings {
  KernelCalibration busy;
  std::optional<KernelCalibration> alone;

  // The median time of class `kernel_class` with every core busy; throws InternalError if it was not timed.
  double busy_seconds(const std::string& kernel_class) const;
};

// Times the kernel classes of `bench` (one OpenMP thread each: a simulated host is one core): bench.concurrent
// copies at once (0: one per physical core) and, where that is more than one, one copy alone. A timing taken while
// other programs kept more than a quarter of a core busy is taken again, up to `retries` times. Progress goes to
// `err`; the timings, to `out` unless it is null.
KernelTimings time_kernel_classes(KernelBenchOptions bench, int retries, std::ostream& err,
                                  std::ostream* out = nullptr);

// The first half of time_kernel_classes: the copies at once only (every core busy).
KernelCalibration time_busy_kernels(KernelBenchOptions bench, int retries, std::ostream& err,
                                    std::ostream* out = nullptr);

// The mean of two timings of the same kernels, class by class (median_s, mean_s, spreads and persistence each the
// mean of the two; the rest from `before`): the kernels as fast as they were on average over a run timed between them.
KernelTimings mean_of(const KernelTimings& before, const KernelTimings& after);

// `platform` with `timings` applied (apply_kernel_calibration), keeping the shared chip's measured waiting share
// and loaded link.
platforms::Platform with_kernel_timings(platforms::Platform platform, const KernelTimings& timings,
                                        const std::string& where);

// `platform` re-timed by `busy` only (the kernels with every core busy): where it has a shared chip, each class
// alone takes its new busy time times the ratio of its times alone and busy in `platform` (dsgd calibrate's long
// timing), so the chip moves with the machine's speed at the pace it was calibrated to. Otherwise as
// with_kernel_timings without a timing alone.
platforms::Platform with_busy_timings(platforms::Platform platform, const KernelCalibration& busy,
                                      const std::string& where);

}  // namespace dsgd::measure
