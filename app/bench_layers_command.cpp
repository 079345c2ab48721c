// `dsgd bench layers`: the kernel model by shape against this machine's own kernels, layer by layer (docs/simulation.md
// "The model on this machine"): every layer of a model timed forward and backward on the CPU back end at several
// batches and thread counts (measure/layer_profile.hpp), this CPU described from what can be read or measured here
// (measure/cpu_kernel_model.hpp), the model's one efficiency FITTED on one point, and every other point predicted
// beside its measurement (simulate/kernel_model_check.hpp). The prediction never reads the measurements it is held to.

#include <cmath>
#include <cstdio>
#include <map>

#include "app/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"
#include "core/stats.hpp"
#include "measure/cpu_kernel_model.hpp"
#include "measure/layer_profile.hpp"
#include "measure/suspect.hpp"
#include "simulate/kernel_model_check.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::app {

namespace {

struct LayersCli {
  measure::LayerProfileOptions layers;
  // model/layer/phase/batch/threads: the kernel that takes the longest of lenet's iteration at batch 64, 1 thread.
  std::string fit = "lenet/conv2/backward/64/1";
  std::string profile_out;
  std::string results;
};

simulate::FittedPoint parse_fitted_point(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t slash; (slash = text.find('/', start)) != std::string::npos; start = slash + 1) {
    parts.push_back(text.substr(start, slash - start));
  }
  parts.push_back(text.substr(start));
  const auto fail = [&] {
    return InputError("bench layers: --fit '" + text + "' is not MODEL/LAYER/PHASE/BATCH/THREADS (e.g. " +
                      LayersCli{}.fit + ")");
  };
  if (parts.size() != 5) throw fail();
  try {
    return {{parts[0], parts[1], platforms::profile_phase_from_string(parts[2]), std::stoi(parts[4])},
            std::stoll(parts[3])};
  } catch (const std::logic_error&) {
    throw fail();
  }
}

std::string kernel_model_text(const platforms::Platform& platform) {
  const auto& cpu = platform.nodes.cpu;
  const auto& model = *cpu.kernels;
  std::string text = std::to_string(model.parallel_units) + " cores, peak " + fixed(cpu.peak_flops / 1e9, 1) +
                     " GFLOP/s, tile " + std::to_string(model.tile_m) + "x" + std::to_string(model.tile_n) +
                     ", fixed " + fixed(model.fixed_s * 1e6, 2) + " us, fork-join " +
                     fixed(model.sync_s_per_unit * 1e6, 2) + " us/core, L2 " + bytes_text(*model.cache->size_bytes) +
                     " at " + fixed(model.cache->bandwidth_Bps / 1e9, 1) + " GB/s";
  for (const auto& memory : platform.nodes.memories) {
    text += ", " + memory.name + (memory.size_bytes ? " " + bytes_text(*memory.size_bytes) : std::string()) + " at " +
            fixed(memory.bandwidth_Bps / 1e9, 1) + " GB/s";
  }
  for (const auto& [kind, rate] : model.streaming) {
    text += ", " + kind + " " + fixed(rate.forward_Bps / 1e9, 1) + "/" + fixed(rate.backward_Bps / 1e9, 1) + " GB/s";
    if (rate.per_image_s > 0) text += " + " + fixed(rate.per_image_s * 1e9, 0) + " ns/image";
    if (rate.channel_block > 0) {
      text += " (" + fixed(rate.forward_padded_share, 2) + "/" + fixed(rate.backward_padded_share, 2) +
              " on channels padded to " + std::to_string(rate.channel_block) + ", last block " +
              fixed(rate.forward_tail_s * 1e9, 0) + "/" + fixed(rate.backward_tail_s * 1e9, 0) + " ns/image)";
    }
    if (!rate.threaded) text += " (1 thread)";
    if (rate.threaded && rate.parallel_efficiency < 1)
      text += " (" + fixed(rate.parallel_efficiency, 2) + " of the cores)";
  }
  for (const auto& [kind, library] : model.gemm_library) {
    const double lowering_s[] = {library.forward_lowering_s, library.backward_data_lowering_s,
                                 library.backward_weights_lowering_s};
    if (library.relative_efficiency != 1) text += ", " + kind + " at " + fixed(library.relative_efficiency, 2);
    if (library.pack_Bps > 0) text += " packing " + fixed(library.pack_Bps / 1e9, 1) + " GB/s";
    if (library.parallel_efficiency < 1) {
      text += ", " + kind + " GEMMs at " + fixed(library.parallel_efficiency, 2) + " of the cores";
    }
    if (lowering_s[0] + lowering_s[1] + lowering_s[2] > 0) {
      text += ", " + kind + " lowering " + fixed(lowering_s[0] * 1e9, 2) + "/" + fixed(lowering_s[1] * 1e9, 2) + "/" +
              fixed(lowering_s[2] * 1e9, 2) + " ns/element";
    }
  }
  text += ", efficiency " + fixed(model.efficiency, 3) + " FITTED";
  return model.efficiency > 1 ? text + " " + simulate::above_peak_flag(model.efficiency) : text;
}

reports::Entry row_entry(const simulate::KernelCheckRow& row) {
  reports::Entry entry;
  const std::string phase(to_string(row.phase));
  entry.name = "layers/" + row.model + "/" + row.layer + "/" + phase + "/" + std::to_string(row.batch) + "/" +
               std::to_string(row.threads);
  entry.executor = "threads";
  entry.fidelity = "measured";
  entry.model = row.model;
  entry.real_time = row.measured_s;
  entry.counters = {{"batch", static_cast<double>(row.batch)},
                    {"omp_threads", row.threads},
                    {"measured_ms", row.measured_s * 1e3},
                    {"predicted_ms", row.predicted_s * 1e3},
                    {"error_percent", 100 * row.error()}};
  entry.labels = {
      {"kind", "point"}, {"layer", row.layer}, {"phase", phase}, {"determined", row.fitted ? "FITTED" : "predicted"}};
  return entry;
}

void bench_layers(Context& context, const LayersCli& cli) {
  const simulate::FittedPoint point = parse_fitted_point(cli.fit);
  auto results = new_results(context);
  const std::string where = results.provenance.host_name + ", " + results.provenance.date;
  context.err << "bench: describing this CPU's kernels" << std::endl;
  const auto description = measure::describe_cpu_kernels(where);
  const auto measured = measure::measure_layer_profile(cli.layers, where, context.err);
  if (!cli.profile_out.empty()) {
    write_file_atomically(cli.profile_out, platforms::to_json(measured.profile).dump(1) + "\n");
  }
  platforms::Platform platform = simulate::flat_platform(1, 1e-6, 1e9, description.cpu.peak_flops);
  platform.name = "this machine's kernel model";
  platform.nodes.cpu = description.cpu;
  platform.nodes.memories = description.memories;
  simulate::fit_kernel_model(platform, measured.profile, point);
  const auto rows = simulate::check_kernel_model(platform, measured.profile, point);
  const auto summary = simulate::summarize(rows);
  const std::string busy = measure::busy_machine_warning(measured.others_cores);

  const std::string machine = kernel_model_text(platform);
  context.out << "kernel model: " << machine << " (on " << point.key.model << " " << point.key.layer << " "
              << to_string(point.key.phase) << ", batch " << point.batch << ", " << point.key.threads << " thread)\n";
  char line[200];
  std::snprintf(line, sizeof line, "%-8s %-8s %-9s %6s %7s %12s %12s %8s\n", "model", "layer", "phase", "batch",
                "threads", "measured ms", "model ms", "error");
  context.out << line;
  std::map<std::pair<std::int64_t, int>, std::vector<double>> by_case;
  for (const auto& row : rows) {
    std::snprintf(line, sizeof line, "%-8s %-8s %-9s %6lld %7d %12.4f %12.4f %+7.1f%%%s\n", row.model.c_str(),
                  row.layer.c_str(), std::string(to_string(row.phase)).c_str(), static_cast<long long>(row.batch),
                  row.threads, row.measured_s * 1e3, row.predicted_s * 1e3, 100 * row.error(),
                  row.fitted ? "  FITTED" : "");
    context.out << line;
    if (!row.fitted) by_case[{row.batch, row.threads}].push_back(std::abs(row.error()));
    results.benchmarks.push_back(row_entry(row));
  }
  for (auto& [key, errors] : by_case) {
    reports::Entry entry;
    entry.name = "layers/median/" + std::to_string(key.first) + "/" + std::to_string(key.second);
    entry.executor = "threads";
    entry.fidelity = "measured";
    entry.counters = {{"batch", static_cast<double>(key.first)},
                      {"omp_threads", key.second},
                      {"layers", static_cast<double>(errors.size())},
                      {"median_abs_error_percent", 100 * median(errors)},
                      {"max_abs_error_percent", 100 * *std::max_element(errors.begin(), errors.end())}};
    entry.labels = {{"kind", "case"}};
    results.benchmarks.push_back(std::move(entry));
  }
  reports::Entry total;
  total.name = "layers/summary";
  total.executor = "threads";
  total.fidelity = "measured";
  total.counters = {{"rows", summary.rows},
                    {"within_15_percent", summary.within_15},
                    {"median_abs_error_percent", 100 * summary.median_abs_error},
                    {"mean_error_percent", 100 * summary.mean_error},
                    {"efficiency", platform.nodes.cpu.kernels->efficiency},
                    {"others_cores", measured.others_cores}};
  total.labels = {{"kind", "summary"},
                  {"kernel_model", machine},
                  {"fitted_on", cli.fit},
                  {"busy", busy.empty() ? "no" : "yes"},
                  {"above_peak", platform.nodes.cpu.kernels->efficiency > 1 ? "yes" : "no"}};
  results.benchmarks.push_back(total);
  if (!cli.results.empty()) reports::write_results(cli.results, results);

  std::snprintf(line, sizeof line,
                "model against measured: %d of %d points within 15%%, median |error| %.1f%%, mean error %+.1f%%; "
                "worst %+.0f%%\n",
                summary.within_15, summary.rows, 100 * summary.median_abs_error, 100 * summary.mean_error,
                summary.worst ? 100 * summary.worst->error() : 0.0);
  context.out << line;
  if (!busy.empty()) context.out << busy << '\n';
}

}  // namespace

void register_bench_layers_command(CLI::App& bench, Context& context) {
  auto cli = std::make_shared<LayersCli>();
  auto* command = bench.add_subcommand(
      "layers", "Each layer's kernels timed at several batches and thread counts beside the kernel model's prediction");
  command->add_option("--models", cli->layers.models, "Models whose layers are timed")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--batches", cli->layers.batches, "Batch sizes")->delimiter(',')->capture_default_str();
  command->add_option("--threads", cli->layers.threads, "The back end's thread counts")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--repetitions", cli->layers.repetitions, "Timed runs per kernel (the median is kept)")
      ->capture_default_str();
  command->add_option("--fit", cli->fit, "The one point the model's efficiency is FITTED on")->capture_default_str();
  command->add_option("--profile-out", cli->profile_out, "Also write the measured kernel profile here")
      ->check(output_file_check());
  command->add_option("--results", cli->results, "Write the results (JSON) here")->check(output_file_check());
  command->callback([&context, cli] { bench_layers(context, *cli); });
}

}  // namespace dsgd::app
