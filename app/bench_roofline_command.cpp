// `dsgd bench roofline`: this machine's kernels against its roofline (docs/roofline.md): the FMA peak of its cores
// from /proc/cpuinfo and the memory bandwidth of STREAM's triad, with OpenBLAS sgemm at several sizes, the kernel
// classes the simulator prices (a model's forward+backward, its inner-product layers, the SGD update; timed as
// `dsgd calibrate` times them, one copy per core at once) and the triad itself placed by arithmetic intensity.

#include <omp.h>

#include <algorithm>
#include <cstdio>

#include "algorithms/dmath/gemm_bench.hpp"
#include "app/commands.hpp"
#include "core/format.hpp"
#include "core/model_zoo.hpp"
#include "core/stats.hpp"
#include "measure/background_load.hpp"
#include "measure/calibration.hpp"
#include "measure/kernel_calibration.hpp"
#include "measure/roofline.hpp"
#include "measure/suspect.hpp"

namespace dsgd::app {

namespace {

struct RooflineCli {
  std::string model = "lenet";
  int batch = 64;
  std::vector<std::int64_t> sgemm_sizes = {64, 128, 256, 512, 1024, 2048};
  int repetitions = 20;
  std::string results;
};

// OpenBLAS sgemm of n x n on every core: the best of at least `repetitions` and 0.2 s of products (the OpenMP
// threads of earlier work spin for a while after it and slow the first small ones), 2 n^3 FLOPs over the 3 n^2
// floats at least moved.
std::pair<double, double> sgemm_point(std::int64_t n, int threads, int repetitions) {
  algorithms::dmath::GemmBenchOptions options;
  options.size = n;
  const auto seconds = algorithms::dmath::time_whole_sgemm(options, threads, repetitions, 0.2);
  const double flops = 2.0 * static_cast<double>(n * n * n);
  return {flops / (12.0 * static_cast<double>(n * n)), flops / *std::min_element(seconds.begin(), seconds.end())};
}

void bench_roofline(Context& context, const RooflineCli& cli) {
  if (cli.batch < 1 || cli.repetitions < 1) throw InputError("bench roofline: --batch and --repetitions must be >= 1");
  const ModelSpec model = build_model(cli.model);
  const auto cpu = measure::read_cpu_facts();
  const auto core = measure::derive_core_peak(cpu);
  const int cores = std::max(cpu.physical_cores, 1);
  if (cpu.clock_Hz <= 0) throw UnavailableError("bench roofline: /proc/cpuinfo gives no clock to derive a peak from");
  const double nominal_peak = cores * core.sp_flops_per_cycle * cpu.clock_Hz;
  auto results = new_results(context);
  const auto start = measure::CpuClock::now();

  const auto stream = measure::stream_triad(cores);
  const auto stream_one = measure::stream_triad(1);
  context.err << "bench: stream triad done" << std::endl;

  std::vector<reports::Entry> points;
  for (const auto n : cli.sgemm_sizes) {
    const auto [intensity, rate] = sgemm_point(n, cores, cli.repetitions);
    points.push_back(
        measure::roofline_point("OpenBLAS sgemm", "kernel", intensity, rate,
                                "sgemm " + std::to_string(n) + " on " + std::to_string(cores) + " threads"));
  }
  context.err << "bench: sgemm done" << std::endl;

  // The kernel classes, one copy per core at once (as `dsgd calibrate` times them for a busy machine).
  measure::KernelBenchOptions kernels;
  kernels.model = cli.model;
  kernels.batch = cli.batch;
  kernels.concurrent = cores;
  kernels.repetitions = cli.repetitions;
  const auto timed = measure::measure_kernels(kernels);
  context.err << "bench: kernel classes done" << std::endl;

  for (const auto& kernel : timed.kernels) {
    double bytes = 0;
    std::string what = kernel.what;
    if (kernel.kernel_class == "conv") bytes = measure::step_bytes(model, cli.batch, false);
    if (kernel.kernel_class == "gemm") bytes = measure::step_bytes(model, cli.batch, true);
    // Trainer::sgd_step: weights, gradients and velocity read, weights and velocity written.
    if (kernel.kernel_class == "elementwise") bytes = 5.0 * sizeof(float) * static_cast<double>(model.parameters());
    if (bytes <= 0) continue;  // "copy" moves bytes: no FLOPs to place
    points.push_back(measure::roofline_point(cli.model + " " + kernel.kernel_class, "kernel", kernel.work / bytes,
                                             kernel.rate() * timed.concurrent,
                                             what + ", x " + std::to_string(cores) + " copies"));
  }
  points.push_back(measure::roofline_point(
      "STREAM triad", "kernel", 2.0 / 12.0, stream.bytes_per_s * 2.0 / 12.0,
      "a = b + s c, " + std::to_string(stream.elements) + " floats, " + std::to_string(stream.threads) + " threads"));

  // The peak is the nominal clock's unless a kernel ran faster (the cores boost): then that kernel's rate, as `dsgd
  // calibrate` raises its clock.
  measure::RooflineMachine machine{cores, nominal_peak,
                                   std::to_string(cores) + " cores x " + significant(core.sp_flops_per_cycle, 3) +
                                       " FLOP/cycle x " + significant(cpu.clock_Hz / 1e9, 4) + " GHz nominal = " +
                                       fixed(nominal_peak / 1e9, 1) + " GFLOP/s (" + core.per_cycle_source + ")",
                                   stream, stream_one};
  auto roof = measure::roofline(machine, std::move(points));
  const double peak = roof.peak_flops;
  const double ridge = roof.ridge_flop_per_byte;
  const std::string& source = roof.source;
  std::vector<std::string> warnings;
  if (const auto busy = measure::busy_machine_warning(measure::CpuClock::now().others_cores_since(start));
      !busy.empty()) {
    warnings.push_back(busy);
  }
  warnings.insert(warnings.end(), roof.warnings.begin(), roof.warnings.end());
  results.benchmarks = std::move(roof.entries);
  if (!cli.results.empty()) reports::write_results(cli.results, results);

  char line[160];
  std::snprintf(line, sizeof line,
                "roofline of this machine: peak %.1f GFLOP/s, STREAM triad %.1f GB/s (%d threads; %.1f GB/s on one), "
                "ridge at %.2f FLOP/byte\n",
                peak / 1e9, stream.bytes_per_s / 1e9, stream.threads, stream_one.bytes_per_s / 1e9, ridge);
  context.out << line << "peak: " << source << "\n";
  std::snprintf(line, sizeof line, "%-24s %12s %10s %10s  %s\n", "kernel", "FLOP/byte", "GFLOP/s", "of roof", "what");
  context.out << line;
  for (const auto& entry : results.benchmarks) {
    if (entry.labels.at("kind") != "kernel") continue;
    const double x = entry.counters.at("intensity_flop_per_byte");
    const double y = entry.counters.at("gflops") * 1e9;
    std::snprintf(line, sizeof line, "%-24s %12.3g %10.1f %9.0f%%  ", entry.labels.at("series").c_str(), x, y / 1e9,
                  100.0 * y / std::min(peak, stream.bytes_per_s * x));
    context.out << line << entry.labels.at("what") << "\n";
  }
  for (const auto& warning : warnings) context.out << warning << "\n";
}

}  // namespace

void register_bench_roofline_command(CLI::App& bench, Context& context) {
  auto cli = std::make_shared<RooflineCli>();
  auto* command = bench.add_subcommand(
      "roofline", "This machine's kernels (sgemm, a model's layers, the SGD update, STREAM) against its roofline");
  command->add_option("--model", cli->model, "Model whose kernel classes are timed")->capture_default_str();
  command->add_option("--batch", cli->batch, "Images per batch of the timed kernels")->capture_default_str();
  command->add_option("--sgemm-sizes", cli->sgemm_sizes, "Square sgemm sizes")->delimiter(',')->capture_default_str();
  command->add_option("--repetitions", cli->repetitions, "Timed repetitions per kernel")->capture_default_str();
  command->add_option("--results", cli->results, "Write the results (JSON) here")->check(output_file_check());
  command->callback([&context, cli] { bench_roofline(context, *cli); });
}

}  // namespace dsgd::app
