#include "measure/kernel_timings.hpp"

#include <algorithm>
#include <ostream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "measure/background_load.hpp"
#include "measure/calibration.hpp"
#include "measure/suspect.hpp"

namespace dsgd::measure {

namespace {

KernelCalibration time_copies(KernelBenchOptions bench, int copies, bool turns, int retries, std::ostream& err,
                              std::ostream* out) {
  bench.concurrent = copies;
  bench.turns = turns;
  err << "timing the kernel classes on " << bench.model << ", batch " << bench.batch << ", " << bench.threads
      << " thread(s), " << bench.concurrent << (turns ? " copies in turn" : " copies at once") << std::endl;
  // The least disturbed of the measurements is kept, and its sources say how disturbed it was.
  auto disturbed = least_disturbed(
      [&] { return measure_kernels(bench); }, retries, kBusyCores,
      [&](double others) {
        err << format("other programs kept %.2f cores busy; timing the kernels again\n", others) << std::flush;
      });
  auto kernels = std::move(disturbed.value);
  kernels.others_cores = disturbed.others_cores;
  if (out == nullptr) return kernels;
  *out << "kernel classes (median over " << bench.concurrent << " copies x " << bench.repetitions << " repetitions):\n";
  for (const auto& timing : kernels.kernels) *out << "  " << describe(timing) << '\n';
  *out << "  " << describe(kernels.memory) << '\n';
  *out << format("  (other programs kept %.2f cores busy meanwhile)\n", kernels.others_cores);
  return kernels;
}

// bench.concurrent, or one copy per physical core.
int copies_of(const KernelBenchOptions& bench) {
  return bench.concurrent > 0 ? bench.concurrent : std::max(1, read_cpu_facts().physical_cores);
}

}  // namespace

double KernelTimings::busy_seconds(const std::string& kernel_class) const {
  for (const auto& timing : busy.kernels) {
    if (timing.kernel_class == kernel_class) return timing.median_s;
  }
  throw InternalError("kernel timings: class '" + kernel_class + "' was not timed");
}

// By default as many copies at once as this machine has cores, as a run with a rank per core keeps them busy; and
// the same copies taking turns, because a core whose neighbours idle runs at another rate (an algorithm whose
// workers take turns, or drift apart, computes alone part of the time): the platform's shared chip carries both.
// In turns, not one copy repeating alone: a rank computing while the others wait finds their data in the shared
// cache and its core just woken from idling, which one copy alone never does.
KernelTimings time_kernel_classes(KernelBenchOptions bench, int retries, std::ostream& err, std::ostream* out) {
  const int copies = copies_of(bench);
  KernelTimings timings{time_copies(bench, copies, false, retries, err, out), std::nullopt};
  if (copies > 1) timings.alone = time_copies(bench, copies, true, retries, err, out);
  return timings;
}

KernelCalibration time_busy_kernels(KernelBenchOptions bench, int retries, std::ostream& err, std::ostream* out) {
  return time_copies(bench, copies_of(bench), false, retries, err, out);
}

KernelTimings mean_of(const KernelTimings& before, const KernelTimings& after) {
  const auto mean = [](KernelCalibration into, const KernelCalibration& other) {
    const auto counterpart = [&](const KernelTiming& timing) -> const KernelTiming& {
      if (timing.kernel_class == other.memory.kernel_class) return other.memory;
      const auto match = std::find_if(other.kernels.begin(), other.kernels.end(),
                                      [&](const auto& o) { return o.kernel_class == timing.kernel_class; });
      if (match == other.kernels.end()) throw InternalError("kernel timings: '" + timing.kernel_class + "' timed once");
      return *match;
    };
    const auto average = [&](KernelTiming& timing) {
      const auto& twin = counterpart(timing);
      timing.median_s = (timing.median_s + twin.median_s) / 2;
      timing.mean_s = (timing.mean_s + twin.mean_s) / 2;
      timing.persistence = (timing.persistence + twin.persistence) / 2;
      timing.log_spread = (timing.log_spread + twin.log_spread) / 2;
      timing.slowest_ratio = (timing.slowest_ratio + twin.slowest_ratio) / 2;
      timing.what += "; the mean of its timings before and after a run";
    };
    for (auto& timing : into.kernels) average(timing);
    average(into.memory);
    into.others_cores = std::max(into.others_cores, other.others_cores);
    into.iteration_s = (into.iteration_s + other.iteration_s) / 2;
    return into;
  };
  KernelTimings result{mean(before.busy, after.busy), std::nullopt};
  if (before.alone && after.alone) result.alone = mean(*before.alone, *after.alone);
  return result;
}

platforms::Platform with_kernel_timings(platforms::Platform platform, const KernelTimings& timings,
                                        const std::string& where) {
  const auto chip = platform.nodes.shared_chip;
  apply_kernel_calibration(platform, timings.busy, where, timings.alone ? &*timings.alone : nullptr);
  if (chip && platform.nodes.shared_chip) {
    platform.nodes.shared_chip->waiting_share = chip->waiting_share;
    platform.nodes.shared_chip->loaded_link = chip->loaded_link;
    if (const auto source = chip->sources.find("waiting_share"); source != chip->sources.end()) {
      platform.nodes.shared_chip->sources["waiting_share"] = source->second;
    }
  }
  return platform;
}

platforms::Platform with_busy_timings(platforms::Platform platform, const KernelCalibration& busy,
                                      const std::string& where) {
  if (!platform.nodes.shared_chip) return with_kernel_timings(std::move(platform), {busy, std::nullopt}, where);
  // Both efficiencies are against the platform's one peak (or memory bandwidth, for "copy"), so the ratio of the
  // times alone and busy is the busy efficiency over the alone one; a class the chip does not list runs alone as busy.
  const auto& chip = *platform.nodes.shared_chip;
  const auto& cpu = platform.nodes.cpu.efficiency;
  KernelCalibration alone = busy;
  alone.concurrent = 1;
  for (auto& timing : alone.kernels) {
    const auto listed = chip.alone.by_class.find(timing.kernel_class);
    const auto calibrated = cpu.by_class.find(timing.kernel_class);
    if (listed == chip.alone.by_class.end() || calibrated == cpu.by_class.end()) continue;
    const double ratio = calibrated->second / listed->second;
    timing.median_s *= ratio;
    timing.mean_s *= ratio;
    const auto source = chip.alone.sources.find(timing.kernel_class);
    timing.what += format("; x %.4f for alone, the ratio of its times alone and busy in ", ratio) +
                   (source != chip.alone.sources.end() ? "(" + source->second + ")" : std::string("the platform"));
  }
  return with_kernel_timings(std::move(platform), {busy, std::move(alone)}, where);
}

}  // namespace dsgd::measure
