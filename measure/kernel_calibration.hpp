#pragma once
// Calibrating compute from microbenchmarks (docs/design.md "Calibration, prediction, validation"): the achieved
// rate of each kernel class a ComputeStep names (core/comm.hpp), measured with the native kernels the Trainer runs
// (algorithms/trainer.cpp), divided by the platform's peak into the `kernel_efficiency` a simulation charges.
//
//   class        what runs (as the Trainer runs it)                           work counted (as the Trainer declares)
//   conv         nn::Network::train_step: forward + backward of the model      3 x forward FLOPs x batch
//   gemm         forward + backward of the model's inner-product layers alone  3 x their forward FLOPs x batch
//   elementwise  nn::Sgd::step over the model's parameters                     4 FLOPs per parameter
//   copy         data::fill_batch + copy_to_device of one batch               batch x (input floats + 1) x 4 bytes
// plus a memcpy of the parameter vector, the platform's memory bandwidth (the working set of the updates and
// exchanges, so the roofline's bytes term sees the cache level they run in).
//
// The measurement (measure_kernels) runs the kernels; the rest works on numbers, so it is unit-tested on synthetic
// timings.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "platforms/platform.hpp"

namespace dsgd::measure {

// One microbenchmark: `work` units (FLOPs, or bytes for "copy" and the memory bandwidth) per repetition, timed
// `repetitions` times after untimed warm-up ones.
struct KernelTiming {
  std::string kernel_class;  // "conv", "gemm", "elementwise", "copy"; "memory" for the bandwidth memcpy
  std::string what;          // "forward+backward of lenet, batch 64, 1 thread"
  double work = 0;           // FLOPs, or bytes
  int repetitions = 0;
  double median_s = 0;
  // The spread of the repetitions: the standard deviation of log(time), estimated from the interquartile range
  // (IQR / 1.349, exact for a lognormal) so that a few repetitions preempted by other programs do not dominate it.
  double log_spread = 0;
  // With several copies at once: the mean over repetitions of the slowest copy's time, over the mean time of all
  // (what a synchronous step of that many ranks pays for their spread); 0 for one copy.
  double slowest_ratio = 0;
  // The mean of the repetitions: what a run of many iterations pays on average. This machine's repetitions have a
  // long upper tail (the forward/backward's mean was 10% above its median with both cores busy), and the
  // simulated noise factor has mean 1, so the mean is the time a simulation charges. 0: not measured (the median
  // stands in).
  double mean_s = 0;
  // How long a copy stays fast or slow: the lag-1 autocorrelation of its log(time) per repetition (with several
  // copies, of its deviation from the copies' mean log(time) in that repetition: only what sets copies apart); 0
  // for fewer than 3 repetitions.
  double persistence = 0;

  double charged_s() const { return mean_s > 0 ? mean_s : median_s; }
  double rate() const { return work / charged_s(); }  // FLOP/s or B/s, at the mean time
};

struct KernelBenchOptions {
  std::string model = "lenet";
  int batch = 64;   // per worker, as the runs to predict use
  int threads = 1;  // OpenMP threads of the back end: one per rank (a simulated host is one core)
  // Copies of the benchmark run at once, each on its own thread and back end, in step (a barrier before each
  // kernel): the runs to predict keep every core busy, and a core's rate with its neighbours idle (more of the
  // shared cache and memory bandwidth, a higher boost clock) is not the rate it has then. 1: the kernel alone.
  int concurrent = 1;
  // With concurrent > 1: the copies take turns instead, one computing while the others wait at the barrier, and
  // the timings are those of a core computing alone (KernelCalibration::concurrent 1) as a rank of a run does while
  // the others wait: its model's data pushed out of the shared cache by theirs, its core just woken from idling.
  // That is slower than one copy repeating alone (docs/validation.md "Threads and cores").
  bool turns = false;
  int repetitions = 30;                // timed, per kernel
  int warmup = 3;                      // untimed first repetitions (page faults, oneDNN primitive creation)
  std::size_t dataset_images = 60000;  // synthetic training set the batches are drawn from (Fashion-MNIST's size)
  std::uint64_t seed = 1;
};

// The name of the node memory apply_kernel_calibration writes.
inline constexpr const char* kMeasuredMemoryName = "measured memcpy";

struct KernelCalibration {
  std::vector<KernelTiming> kernels;  // one per measured class
  KernelTiming memory;                // the memcpy: bytes read + written per second
  int threads = 1;
  int concurrent = 1;
  double others_cores = 0;  // cores other programs kept busy meanwhile (measure/background_load.hpp), for sources
  // The mean time of one repetition of the iteration's kernels (batch load, forward+backward, update, memcpy): the
  // spacing of the samples whose persistence is measured. 0: not measured.
  double iteration_s = 0;
};

// Runs the microbenchmarks on the CPU back end, `concurrent` copies at once; each class's median_s and mean_s are
// over all copies' repetitions together. Throws InputError for bad options (unknown model, batch, repetitions,
// threads or concurrent < 1, a model that cannot train here) and what the kernels throw.
KernelCalibration measure_kernels(const KernelBenchOptions& options);

// The standard deviation of log(samples) estimated from their interquartile range (quartiles interpolated
// linearly), IQR / 1.349; 0 for fewer than 4 samples or a non-positive lower quartile.
double log_spread(std::vector<double> samples);

// KernelTiming::persistence of repetitions timed as `samples_per_copy[copy][repetition]` (every copy as many):
// the lag-1 autocorrelation of each copy's log(time) -- less the copies' mean log(time) of the repetition where
// there are several copies -- averaged over the copies. 0 with fewer than 3 repetitions or no variation.
double persistence(const std::vector<std::vector<double>>& samples_per_copy);

// The sigma of a lognormal factor of mean 1 whose expected maximum over `copies` independent draws is `ratio` (the
// spread that makes a simulated synchronous step of that many ranks wait as the measured one did). Solved by
// bisection on a numerical integral; 0 for a ratio <= 1, at most 2. Throws InputError for copies < 2.
double lognormal_sigma_for_slowest(double ratio, int copies);

// The fraction of `peak` (FLOP/s, or B/s for copy) that `timing` achieved. Throws InputError for a non-positive
// peak or timing, or a rate above the peak by more than 5% (then the peak is wrong, not the kernel). A rate
// between the peak and 5% above it is measurement noise and counts as 1.
double kernel_efficiency(const KernelTiming& timing, double peak);

// Writes the calibration into `platform`: a node memory kMeasuredMemoryName whose bandwidth is the memcpy's rate
// at its median time (the other classes are charged at their mean: KernelTiming::mean_s)
// (replacing any memory of that name), and the CPU's kernel_efficiency per measured class -- compute classes
// against platform.nodes.cpu.peak_flops, "copy" against that memory bandwidth -- each with a source "measured by
// dsgd calibrate: <what>, <repetitions> repetitions, median <time>, while other programs kept <n> cores busy" on
// `where` (host, date). Where a compute class ran faster than the CPU's peak, the clock (and so the peak) is raised to
// the least that explains it, with that as its source: /proc/cpuinfo gives the nominal clock, and cores boost above it.
// Throws as kernel_efficiency does, and InputError if the platform's CPU has more cores than the kernels ran threads
// (its peak would not be the one they could reach).
//
// With `alone` (the same kernels timed in one copy while the other cores idled), the platform's nodes also become
// one shared chip (platforms::SharedChip) of calibration.concurrent cores whose kernel_efficiency_alone is that
// timing's, and the clock is raised to explain the fastest kernel of either timing.
//
// The platform's noise becomes lognormal with the spread of the forward/backward (class "conv", every core busy): the
// repetitions' spread is what makes one rank of a synchronous step wait for another. With several copies the sigma
// is the one whose expected slowest copy matches the measured slowest_ratio (lognormal_sigma_for_slowest; a fitted
// parameter, fitted to the microbenchmark and named so in its source), else the log_spread. Where the
// forward/backward's persistence p is positive and iteration_s is known, the noise's correlation time is the one
// whose correlation over one repetition is p: -iteration_s / ln p (p at most 0.99), also named fitted.
void apply_kernel_calibration(platforms::Platform& platform, const KernelCalibration& calibration,
                              const std::string& where, const KernelCalibration* alone = nullptr);

// One line per timing: "conv: forward+backward of lenet ... 1.23 ms median of 30, 4.5 GFLOP/s".
std::string describe(const KernelTiming& timing);

}  // namespace dsgd::measure
