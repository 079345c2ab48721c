#include "simulate/dmath_table5.hpp"

#include <algorithm>
#include <map>

#include "algorithms/dmath/gemm_entry.hpp"
#include "algorithms/dmath/table5.hpp"
#include "algorithms/memory_estimate.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"
#include "platforms/catalog.hpp"
#include "simulate/scaling_study.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/study_entries.hpp"

namespace dsgd::simulate {

namespace dmath = algorithms::dmath;

reports::Entry simulate_gemm_point(const platforms::Platform& platform, const PlacementOptions& placement,
                                   const dmath::GemmBenchOptions& options, int ranks, double timeout_s) {
  WorldOptions world;
  world.size = ranks;
  world.payload = false;
  world.timeout_s = timeout_s;
  SimulationOptions simulation;
  simulation.placement = placement;
  std::vector<dmath::GemmRankResult> all(static_cast<std::size_t>(ranks));
  simulation.collect = [&] { return dmath::encode(all); };
  const auto simulated = simgrid::run(
      platform, world,
      [&](Comm& comm) { all[static_cast<std::size_t>(comm.rank())] = dmath::run_gemm_bench(comm, options); },
      simulation);
  auto entry = dmath::to_entry(options, dmath::decode_gemm_results(simulated.collected), "simgrid",
                               std::string(to_string(simulated.fidelity)),
                               "predicted: kernel class 'gemm' of platform " + platform.name);
  add_simulation(entry, simulated, platform.name);
  return entry;
}

namespace {

// An entry of the study that is not a simulated point: the fitted value, a cell that does not fit.
reports::Entry study_entry(std::string name, const std::string& fidelity, int gpus) {
  return reports::timed_entry(std::move(name), "simgrid", fidelity, "cyclic", gpus, 0);
}

// Table V's set-up: cyclic with kept blocks, one product per point (the simulation has no noise), GPUs filling one
// server (16) before the next.
dmath::GemmBenchOptions table5_options(std::int64_t size) {
  dmath::GemmBenchOptions options;
  options.size = size;
  options.rounds = 1;
  options.verify = false;
  return options;
}

// The one efficiency Table V is predicted with, and whether this study fitted it.
struct Table5Efficiency {
  double value = 0;
  std::string parameter;
  std::string fitted_on;
  bool fitted_here = false;  // on cuBLAS's published time at kTable5FitSize, whose cell is then "fitted"
};

// A device with a kernel model prices each block product by its shape with the efficiency its platform carries
// (k80-dmath's, FITTED by `dsgd simulate --study k80`: one per GPU model, as seed 001's other tables use); one
// without is given a `gemm` class efficiency fitted so that one GPU takes cuBLAS's published time at kTable5FitSize
// (solve_kernel_efficiency, exact, as for seed 000's conv efficiency).
Table5Efficiency table5_efficiency(platforms::Platform& platform, const PlacementOptions& placement, double timeout_s) {
  const auto& device = platform.nodes.devices.front();
  Table5Efficiency efficiency;
  if (device.kernels) {
    efficiency.value = device.kernels->efficiency;
    efficiency.parameter = "kernel-model efficiency of a " + device.model;
    efficiency.fitted_on = platforms::efficiency_basis(*device.kernels).text;
    return efficiency;
  }
  const auto& rows = dmath::table5();
  const auto fit_row =
      std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.size == dmath::kTable5FitSize; });
  const double target_s = *fit_row->cublas_1;
  efficiency.value = solve_kernel_efficiency(
      platform, "gemm", target_s,
      [&](const platforms::Platform& probe) {
        return simulate_gemm_point(probe, placement, table5_options(dmath::kTable5FitSize), 1, timeout_s).real_time;
      },
      "bench gemm --study table5: cuBLAS's published product of " + std::to_string(dmath::kTable5FitSize) + " in");
  efficiency.parameter = "gemm efficiency of a " + device.model;
  efficiency.fitted_on = "seed 001 Table V, cuBLAS 7.5 on one GPU at " + std::to_string(dmath::kTable5FitSize) + ": " +
                         significant(target_s, 4) + " s";
  efficiency.fitted_here = true;
  set_kernel_efficiency(platform, "gemm", efficiency.value, "FITTED: " + efficiency.fitted_on);
  return efficiency;
}

}  // namespace

Table5Study predict_table5(const std::string& platform_name, int ranks_per_node, double timeout_s) {
  auto platform = platforms::load_platform(platform_name);
  if (platform.nodes.devices.empty()) {
    throw InputError("bench gemm --study table5: platform '" + platform.name + "' has no GPUs (try k80-dmath)");
  }
  PlacementOptions placement;
  placement.ranks_per_node = ranks_per_node > 0 ? ranks_per_node : platform.nodes.devices.front().count;
  for (const int gpus : dmath::kTable5Gpus) place_ranks(platform, gpus, placement);
  const auto& rows = dmath::table5();
  const Table5Efficiency efficiency = table5_efficiency(platform, placement, timeout_s);

  Table5Study study{platform.name,
                    placement.ranks_per_node,
                    efficiency.value,
                    efficiency.parameter,
                    efficiency.fitted_on,
                    efficiency.fitted_here,
                    {}};
  auto& results = study.results;
  reports::Entry fitted = study_entry("gemm-table5/fitted/gemm_efficiency", "static", 1);
  fitted.platform = platform.name;
  fitted.labels = {{"study", "table5"},
                   {"kind", "fitted"},
                   {"parameter", "FITTED " + efficiency.parameter},
                   {"fitted_on", efficiency.fitted_on},
                   {"applies_to", "every cell"}};
  fitted.counters["value"] = efficiency.value;
  results.benchmarks.push_back(fitted);

  const double device_bytes = platform.nodes.devices.front().memory.size_bytes.value_or(0);
  std::map<std::int64_t, double> one_gpu;  // predicted, for speed-ups
  for (const auto& row : rows) {
    for (const int gpus : dmath::kTable5Gpus) {
      // dMath keeps the rotated blocks where they fit and otherwise disables replication (seed 001 sec. III).
      auto options = table5_options(row.size);
      const auto per_gpu_bytes = [&] {
        return dmath::estimate_gemm_bench_memory(options, gpus).per_worker_bytes - algorithms::kRankOverheadBytes;
      };
      if (device_bytes > 0 && per_gpu_bytes() > device_bytes) options.cache = false;
      const double per_gpu = per_gpu_bytes();
      const bool fits = device_bytes <= 0 || per_gpu <= device_bytes;
      const auto published = dmath::table5_published(row, gpus);
      const auto cublasxt = dmath::table5_cublasxt(row, gpus);
      reports::Entry entry;
      if (fits) {
        entry = simulate_gemm_point(platform, placement, options, gpus, timeout_s);
        if (gpus == 1) one_gpu[row.size] = entry.real_time;
      } else {
        entry = study_entry("gemm/cyclic/" + std::to_string(row.size), "static", gpus);
        entry.platform = platform.name;
        entry.counters = {{"size", static_cast<double>(row.size)}};
        entry.labels["note"] = "does not fit: " + bytes_text(per_gpu) + " per GPU over " + bytes_text(device_bytes);
      }
      const bool fitted_cell = efficiency.fitted_here && gpus == 1 && row.size == dmath::kTable5FitSize;
      entry.name = "gemm-table5/" + std::to_string(row.size) + "/" + std::to_string(gpus);
      entry.labels["study"] = "table5";
      entry.labels["kind"] = "point";
      entry.labels["size"] = std::to_string(row.size);
      entry.labels["role"] = !fits ? "does not fit" : fitted_cell ? "fitted" : "predicted";
      entry.labels["published_by"] = gpus == 1 ? "cuBLAS 7.5" : "dMath";
      entry.labels["kept_blocks"] = !fits ? "-" : options.cache ? "yes" : "no";
      if (row.size == 8192 || row.size == 16384 || row.size == 24576) entry.labels["figure"] = "yes";
      entry.counters["gpus"] = gpus;
      const double flops = dmath::GemmShape{row.size, row.size, row.size}.flops();
      if (fits) {
        entry.counters["predicted_seconds"] = entry.real_time;
        entry.counters["predicted_gflops"] = flops / entry.real_time / 1e9;
        if (one_gpu.count(row.size) != 0) entry.counters["predicted_speedup"] = one_gpu[row.size] / entry.real_time;
      }
      if (published) {
        entry.counters["published_seconds"] = *published;
        entry.counters["published_gflops"] = flops / *published / 1e9;
        if (row.cublas_1) entry.counters["published_speedup"] = *row.cublas_1 / *published;
        if (fits) entry.counters["diff_percent"] = 100.0 * (entry.real_time - *published) / *published;
      }
      if (cublasxt) entry.counters["cublasxt_seconds"] = *cublasxt;
      results.benchmarks.push_back(std::move(entry));
    }
  }
  return study;
}

}  // namespace dsgd::simulate
