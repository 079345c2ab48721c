#include "measure/validation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/stats.hpp"
#include "measure/background_load.hpp"

namespace dsgd::measure {

double steady_seconds_per_iteration(std::span<const std::pair<double, double>> by_time,
                                    std::span<const std::pair<double, double>> by_iteration) {
  if (by_time.size() < 2 || by_time.size() != by_iteration.size()) {
    throw InputError(
        format("steady seconds per iteration: need as many points by time as by iteration, two or more; "
               "got %zu and %zu",
               by_time.size(), by_iteration.size()));
  }
  std::vector<double> per_round;
  for (std::size_t i = 1; i < by_time.size(); ++i) {
    per_round.push_back((by_time[i].first - by_time[i - 1].first) /
                        (by_iteration[i].first - by_iteration[i - 1].first));
  }
  return dsgd::median(std::move(per_round));
}

double RunMeasurement::disturbance(const RunPolicy& policy) const {
  return std::max(others_cores / policy.busy_cores, std::abs(drift) / policy.max_drift);
}

// The kernels are timed with every core busy, as dsgd calibrate times them; the rate alone follows from the
// platform file's ratio (run_platform, with_busy_timings).
RunMeasurement measure_run(const std::function<double()>& run, const KernelBenchOptions& bench, const RunPolicy& policy,
                           std::ostream& err) {
  int attempts = 0;
  const auto once = [&] {
    RunMeasurement measured;
    measured.attempt = attempts++;
    std::optional<KernelTimings> before;
    if (!policy.file_kernels) before = KernelTimings{time_busy_kernels(bench, 0, err), std::nullopt};
    const auto start = CpuClock::now();
    measured.seconds_per_iteration = run();
    measured.others_cores = CpuClock::now().others_cores_since(start);
    if (before) {
      const KernelTimings after{time_busy_kernels(bench, 0, err), std::nullopt};
      measured.drift = after.busy_seconds("conv") / before->busy_seconds("conv") - 1;
      measured.kernels = mean_of(*before, after);
    }
    return measured;
  };
  // Other programs and the machine's drift both slow a run the microbenchmarks around it may not see
  // (docs/validation.md, "Kernels timed around each run"): the least disturbed measurement is kept.
  auto best = once();
  for (int retry = 0; retry < policy.retries && best.disturbance(policy) > 1; ++retry) {
    err << format(
               "validate: other programs kept %.2f cores busy, the forward/backward's time moved %+.1f%%; "
               "measuring again\n",
               best.others_cores, 100 * best.drift)
        << std::flush;
    auto again = once();
    if (again.disturbance(policy) < best.disturbance(policy)) best = std::move(again);
  }
  return best;
}

double prediction_error(double measured_s, double predicted_s) { return (predicted_s - measured_s) / measured_s; }

void RowRuns::add(const RunMeasurement& run, double predicted) {
  measured_s.push_back(run.seconds_per_iteration);
  predicted_s.push_back(predicted);
  others_cores = std::max(others_cores, run.others_cores);
  if (std::abs(run.drift) > std::abs(drift)) drift = run.drift;
}

std::pair<double, double> RowRuns::median_run() const {
  if (measured_s.empty() || measured_s.size() != predicted_s.size()) {
    throw InputError(
        format("the median run of %zu measured and %zu predicted runs", measured_s.size(), predicted_s.size()));
  }
  std::vector<std::size_t> order(measured_s.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return prediction_error(measured_s[a], predicted_s[a]) < prediction_error(measured_s[b], predicted_s[b]);
  });
  const std::size_t upper = order.size() / 2;
  const std::size_t lower = order.size() % 2 == 1 ? upper : upper - 1;
  return {(measured_s[order[lower]] + measured_s[order[upper]]) / 2,
          (predicted_s[order[lower]] + predicted_s[order[upper]]) / 2};
}

double RowRuns::spread() const {
  const auto [least, most] = std::minmax_element(measured_s.begin(), measured_s.end());
  return (*most - *least) / measured();
}

// docs/validation.md, "More ranks than cores": threads sleep on a condition variable while they wait, MPI ranks
// sleep between polls after a millisecond; the chip's waiting share is what either takes of a core.
platforms::Platform world_platform(platforms::Platform platform, int ranks, int cores, std::string* note) {
  platform.nodes.count = std::max(platform.nodes.count, ranks);
  auto& chip = platform.nodes.shared_chip;
  if (chip) chip->nodes = platform.nodes.count;
  if (ranks > cores) {
    *note = format("%d ranks on %d cores: a waiting rank takes %.3f of a core%s", ranks, cores,
                   chip ? chip->waiting_share : 0.0,
                   chip && chip->loaded_link ? ", a message beside computing ranks the loaded link" : "");
  }
  return platform;
}

platforms::Platform run_platform(platforms::Platform platform, const RunMeasurement& run, const std::string& where,
                                 int ranks, int cores, std::string* note) {
  if (run.kernels) {
    // The rates from the timings around the run; the noise and the chip's ratio alone over busy from the file's,
    // whose timing is long enough to see a copy that is slower for seconds, which tens of repetitions are not
    // (docs/validation.md, "The noise's window" and "Kernels timed around each run").
    auto noise = platform.noise;
    platform = with_busy_timings(std::move(platform), run.kernels->busy, where);
    platform.noise = std::move(noise);
  }
  return world_platform(std::move(platform), ranks, cores, note);
}

}  // namespace dsgd::measure
