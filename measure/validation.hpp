#pragma once
// How `dsgd validate` measures (docs/validation.md): a run's steady seconds per iteration after its warm-up round,
// the kernels timed right before and after it, the run measured again while other programs or the machine's drift
// disturbed it; a row of several runs summed up by its median run by error; and the platform each run is predicted
// on. The prediction itself (SimGrid) is app/'s: measure/ never includes simulate/.

#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "measure/kernel_calibration.hpp"
#include "measure/kernel_timings.hpp"
#include "measure/suspect.hpp"
#include "platforms/platform.hpp"

namespace dsgd::measure {

// Seconds per iteration after the warm-up round, from the (x, y) points a run records at the end of each round:
// `by_time` has the training time in seconds as x, `by_iteration` the iteration (y is unused). Per round, its time
// over its iterations; the median over the rounds after the first, so that a burst of load from other programs in
// one round does not move it. Throws InputError unless both have the same number of points, two or more.
double steady_seconds_per_iteration(std::span<const std::pair<double, double>> by_time,
                                    std::span<const std::pair<double, double>> by_iteration);

// When a run counts as disturbed, and how often it is measured again.
struct RunPolicy {
  int retries = 2;                 // measurements again of a disturbed run
  double busy_cores = kBusyCores;  // disturbed: other programs kept more cores than this busy on average
  double max_drift = 0.05;    // disturbed: the forward/backward's time moved by more than this fraction over the run
  bool file_kernels = false;  // time no kernels around the run: it is predicted with the platform file's
};

// One measured run, with the kernel timings taken around it.
struct RunMeasurement {
  double seconds_per_iteration = 0;
  double others_cores = 0;               // cores other programs kept busy during the run
  std::optional<KernelTimings> kernels;  // the mean of the busy timings before and after; none with file_kernels
  double drift = 0;                      // the forward/backward's ("conv") time after the run over before, minus 1
  int attempt = 0;                       // which call of the run this was, from 0: its result is the one kept

  // How far the run is from undisturbed, in units of what `policy` tolerates (<= 1: undisturbed).
  double disturbance(const RunPolicy& policy) const;
};

// Measures a run: `run` runs it and returns its steady seconds per iteration. Unless policy.file_kernels, the
// kernel classes of `bench` are timed with every core busy right before and after it (progress to `err`), because
// the machine's speed wanders between a calibration and the runs. While the measurement is disturbed it is taken
// again, up to policy.retries times with a line to `err` before each, and the least disturbed one is returned.
RunMeasurement measure_run(const std::function<double()>& run, const KernelBenchOptions& bench, const RunPolicy& policy,
                           std::ostream& err);

// The error of a prediction: (predicted - measured) / measured.
double prediction_error(double measured_s, double predicted_s);

// The runs of one row of a validation, each measured and predicted, and the row's numbers from them. One run of a
// second measures the machine's phase as much as the algorithm (docs/validation.md, "Several runs a row"): the
// row is its median run by error, which a burst inside one run does not move.
struct RowRuns {
  std::vector<double> measured_s;   // seconds per iteration, per run
  std::vector<double> predicted_s;  // per run, each predicted from the kernels timed around it
  double others_cores = 0;          // the most of any run
  double drift = 0;                 // the largest in size of any run

  // Adds a run and its prediction.
  void add(const RunMeasurement& run, double predicted_s);
  // The median run by error (of an even number, the two middle ones, their seconds averaged): its measured and
  // predicted seconds per iteration. Throws InputError for no runs.
  std::pair<double, double> median_run() const;
  double measured() const { return median_run().first; }
  double predicted() const { return median_run().second; }
  double error() const { return prediction_error(measured(), predicted()); }
  // How far apart the runs measured: (slowest - fastest) / the median run's.
  double spread() const;
};

// The simulated platform of a world of `ranks` ranks on a machine of `cores` cores: one simulated host per rank,
// all on the machine's one shared chip (platforms::SharedChip, from `dsgd calibrate`), so a rank computes at the
// calibrated rate alone or with every core busy as the others compute, and ranks computing beyond the cores (an
// asynchronous master updating while both workers compute) take turns. A waiting rank takes the chip's measured
// waiting share of a core, and a message between two ranks while the others compute costs the chip's loaded link;
// where there are more ranks than cores, `note` says so (else it is left as it is).
platforms::Platform world_platform(platforms::Platform platform, int ranks, int cores, std::string* note);

// The platform a run is predicted on: `platform` (its executor's calibrated one) with the kernel rates timed around
// the run, if any (with_busy_timings, keeping the file's noise), and as many hosts as ranks (world_platform).
// `where` names the machine and date for the rates' sources.
platforms::Platform run_platform(platforms::Platform platform, const RunMeasurement& run, const std::string& where,
                                 int ranks, int cores, std::string* note);

}  // namespace dsgd::measure
