// `dsgd simulate`: weak scaling of one algorithm on a platform, in SimGrid (simulate/weak_scaling.hpp). Prints a
// table (time per iteration, efficiency, the mean rank's breakdown) and writes results, a per-rank breakdown CSV
// and a Chrome trace on request. With --study, a published scaling result predicted instead
// (simulate/scaling_study.hpp): the study's table beside the paper's, fitted values marked; or the communication-
// scheme study (simulate/scheme_study.hpp).

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "app/cli_units.hpp"
#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "app/simulate_transformer.hpp"
#include "core/breakdown.hpp"
#include "platforms/catalog.hpp"
#include "platforms/kernel_profile.hpp"
#include "platforms/loader.hpp"
#include "reports/rank_breakdown.hpp"
#include "reports/trace.hpp"
#include "simulate/scaling_study.hpp"
#include "simulate/scheme_study.hpp"
#include "simulate/study_entries.hpp"
#include "simulate/weak_scaling.hpp"

namespace dsgd::app {

namespace {

struct SimulateCommand {
  std::string platform = "cori-knl";
  simulate::ScalingOptions scaling;
  std::vector<int> cores;
  std::string fidelity = "auto";
  std::string results;
  std::string per_rank_csv;               // a file per world size: NAME-<workers>.csv
  std::string trace;                      // the same for the Chrome trace
  std::string kernel_profile;             // a profile file attached to the platform (platforms/kernel_profile.hpp)
  std::string study;                      // a scaling study instead of the options above
  std::int64_t study_iterations = 0;      // 0: the study's own default (ScalingStudyOptions, SchemeStudyOptions)
  TransformerCommandOptions transformer;  // a transformer's 3-D parallel layout
};

// Ranks that `cores` cores hold: every rank takes node cores / ranks per node cores.
int workers_for_cores(const platforms::Platform& platform, int ranks_per_node, int cores) {
  const int node_cores = platform.nodes.cpu.cores();
  const int per_node = ranks_per_node > 0 ? ranks_per_node : node_cores;
  if (cores < 1 || (static_cast<long long>(cores) * per_node) % node_cores != 0) {
    throw InputError("simulate: --cores " + std::to_string(cores) + " is not a whole number of ranks of " +
                     std::to_string(node_cores / per_node) + " cores");
  }
  return static_cast<int>(static_cast<long long>(cores) * per_node / node_cores);
}

// A results document of this command holding `entries`.
reports::Results with_entries(Context& context, std::vector<reports::Entry> entries) {
  auto results = new_results(context);
  results.benchmarks = std::move(entries);
  return results;
}

std::filesystem::path numbered(const std::string& path, int workers) {
  std::filesystem::path file(path);
  const std::string stem = file.stem().string() + "-" + std::to_string(workers);
  return file.parent_path() / (stem + file.extension().string());
}

void run_study(Context& context, const SimulateCommand& command) {
  const auto& study = algorithms::find_scaling_study(command.study);
  const auto platform = platforms::load_platform(study.platform);
  simulate::ScalingStudyOptions options;
  if (command.study_iterations != 0) options.iterations = command.study_iterations;
  options.noise_seed = command.scaling.noise_seed;
  options.progress = [&context, &study](const std::string& line) {
    context.err << "simulate " << study.name << ": " << line << std::endl;
  };
  const auto outcome = simulate::run_scaling_study(platform, study, options);
  context.out << simulate::format_study(outcome);
  if (!command.results.empty())
    reports::write_results(command.results, with_entries(context, simulate::to_entries(outcome)));
}

void run_scheme_study(Context& context, const SimulateCommand& command) {
  const auto& study = algorithms::find_scheme_study(command.study);
  simulate::SchemeStudyOptions options;
  if (command.study_iterations != 0) options.iterations = command.study_iterations;
  options.workers = command.scaling.workers;
  options.progress = [&context, &study](const std::string& line) {
    context.err << "simulate " << study.name << ": " << line << std::endl;
  };
  const auto outcome = simulate::run_scheme_study(study, options);
  context.out << simulate::format_scheme_study(outcome);
  if (!command.results.empty())
    reports::write_results(command.results, with_entries(context, simulate::to_entries(outcome)));
}

}  // namespace

// Refuses, by name, an option given to --study `name` that the study does not read: it runs on its own platforms,
// models and sizes.
void refuse_unused_options(const CLI::App& command, const std::string& name) {
  const auto inputs = algorithms::simulated_study_inputs(name);
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || option->get_lnames().empty()) continue;
    const std::string& option_name = option->get_lnames().front();
    if (option_name == "help" || option_name == "study" || option_name == "results" ||
        std::find(inputs.options.begin(), inputs.options.end(), option_name) != inputs.options.end()) {
      continue;
    }
    throw InputError("simulate: --" + option_name + " is not used by --study " + name + "; it runs on " +
                     join(inputs.platforms, " and "));
  }
}

void register_simulate_command(CLI::App& app, Context& context) {
  auto command = std::make_shared<SimulateCommand>();
  auto* sim = app.add_subcommand("simulate", "Predict weak scaling of an algorithm on a platform (SimGrid)");
  sim->add_option("--platform", command->platform, "Catalog name or platform file")->capture_default_str();
  sim->add_option("--model", command->scaling.model, "Model of the zoo (any: only sizes and FLOPs are used)")
      ->capture_default_str();
  sim->add_option("--algo", command->scaling.algorithm, "Algorithm (`dsgd algorithms`; required without --study)");
  sim->add_option("--workers", command->scaling.workers, "World sizes in workers, e.g. 1,2,4")->delimiter(',');
  sim->add_option("--cores", command->cores, "World sizes in cores (a KNL mesh: 68,136,...)")->delimiter(',');
  sim->add_option("--ranks-per-node", command->scaling.ranks_per_node,
                  "Ranks per node (0: one per core of a mesh / device / node)")
      ->capture_default_str();
  sim->add_option("--batch", command->scaling.hyper.batch, "Images per worker per iteration")->capture_default_str();
  sim->add_option("--jobs", command->scaling.jobs,
                  "World sizes simulated side by side, each in a process of its own (0: one per core; the analytic "
                  "level runs one at a time)")
      ->capture_default_str();
  sim->add_option("--servers", command->scaling.hyper.servers,
                  "Parameter-server algorithms: shard the server over this many ranks")
      ->capture_default_str();
  sim->add_option("--staleness-bound", command->scaling.hyper.staleness_bound,
                  "ssp-sgd: pushes a worker may run ahead of the slowest (0: BSP)")
      ->capture_default_str();
  add_bytes_option(*sim, "--bucket-bytes", command->scaling.hyper.bucket_bytes,
                   "wfbp-sgd: bytes per gradient bucket (0: one per layer)");
  add_device_memory_option(*sim, command->scaling.hyper.device_memory_bytes);
  add_allreduce_option(*sim, command->scaling.hyper.allreduce);
  add_algorithm_options(*sim, command->scaling.hyper.own);
  sim->add_option("--iterations", command->scaling.iterations, "Iterations simulated per size (steady state)")
      ->capture_default_str();
  add_compression_options(*sim, command->scaling.hyper);
  sim->add_option("--fidelity", command->fidelity, "auto, message, flow or analytic")->capture_default_str();
  sim->add_option("--seed", command->scaling.noise_seed, "Seed of the compute noise")->capture_default_str();
  sim->add_option("--kernel-profile", command->kernel_profile,
                  "Measured per-layer kernel times (`dsgd calibrate --layers` or --torch-trace) pricing the kernels "
                  "they cover on the platform's devices, or its CPU");
  sim->add_option("--results", command->results, "Write the results (JSON) here")->check(output_file_check());
  sim->add_option("--per-rank-csv", command->per_rank_csv, "Per-rank breakdown CSV, one file per size (-N suffix)");
  sim->add_option("--trace", command->trace, "Chrome-trace JSON (Perfetto), one file per size (-N suffix)")
      ->check(output_file_check());
  sim->add_option("--trace-events", command->scaling.trace_events, "Most events a trace keeps")->default_val(200000);
  std::vector<std::string> study_names;
  for (const auto& study : algorithms::scaling_study_catalog()) study_names.push_back(study.name);
  std::vector<std::string> scheme_names;
  for (const auto& study : algorithms::scheme_study_catalog()) scheme_names.push_back(study.name);
  std::vector<std::string> device_names;
  for (const auto& study : algorithms::device_study_catalog()) device_names.push_back(study.name);
  sim->add_option("--study", command->study,
                  "Predict a published scaling result instead (" + join(study_names) +
                      "): its table beside the paper's, fitted values marked FITTED; or a scheme study (" +
                      join(scheme_names) +
                      "): seed 004's communication schemes at 1-512 GPUs, seed 003's GeePS at 1-16 (--workers "
                      "overrides the sizes); or a device study (" +
                      join(device_names) + "): published single-device training rates by the kernel model");
  sim->add_option("--study-iterations", command->study_iterations,
                  "Steady-state iterations simulated per point of a --study (default: " +
                      std::to_string(simulate::ScalingStudyOptions{}.iterations) + " for the published studies, " +
                      std::to_string(simulate::SchemeStudyOptions{}.iterations) + " for the scheme studies)");
  add_transformer_options(*sim, command->transformer);
  sim->callback([&context, command, sim] {
    if (!command->study.empty()) {
      refuse_unused_options(*sim, command->study);
      if (is_transformer_study(command->study)) {
        run_transformer_study(context, command->study, command->results);
        return;
      }
      const auto& schemes = algorithms::scheme_study_catalog();
      const auto& devices = algorithms::device_study_catalog();
      if (std::any_of(devices.begin(), devices.end(),
                      [&](const algorithms::DeviceStudy& study) { return study.name == command->study; })) {
        run_device_study(context, command->study, command->results);
      } else if (std::any_of(schemes.begin(), schemes.end(),
                             [&](const algorithms::SchemeStudy& study) { return study.name == command->study; })) {
        run_scheme_study(context, *command);
      } else {
        run_study(context, *command);
      }
      return;
    }
    if (sim->count("--study-iterations") > 0) {
      throw InputError(
          "simulate: --study-iterations is not used without --study; a weak-scaling run takes --iterations");
    }
    if (is_transformer(command->scaling.model)) {
      if (!command->scaling.algorithm.empty()) {
        throw InputError("simulate: --algo trains the zoo's CNNs; " + command->scaling.model +
                         " runs its tensor, pipeline and data parallel schedule (--tp, --pp, --dp)");
      }
      // A transformer needs GPUs that describe their kernels; cori-knl, the CNN studies' default, has none.
      run_transformer_simulation(context, command->scaling.model,
                                 sim->count("--platform") > 0 ? command->platform : "selene", command->transformer,
                                 command->results);
      return;
    }
    if (const std::string option = given_transformer_option(*sim); !option.empty()) {
      throw InputError("simulate: --" + option + " applies to transformers (" + join(transformer_names()) + "), not " +
                       command->scaling.model);
    }
    if (command->scaling.algorithm.empty()) throw InputError("simulate: --algo is required (or --study NAME)");
    if (command->scaling.jobs < 0) {
      throw InputError("simulate: --jobs must be 0 (one per core) or more, got " +
                       std::to_string(command->scaling.jobs));
    }
    auto platform = platforms::load_platform(command->platform);
    if (!command->kernel_profile.empty()) {
      platforms::attach_kernel_profile(platform, std::make_shared<const platforms::KernelProfile>(
                                                     platforms::load_kernel_profile(command->kernel_profile)));
    }
    auto options = command->scaling;
    options.fidelity = simulate::fidelity_from_string(command->fidelity);
    if (!command->cores.empty() && !options.workers.empty()) {
      throw InputError("simulate: give --workers or --cores, not both");
    }
    for (const int cores : command->cores) {
      options.workers.push_back(workers_for_cores(platform, options.ranks_per_node, cores));
    }
    if (options.workers.empty()) throw InputError("simulate: give the world sizes with --workers or --cores");
    if (command->trace.empty()) options.trace_events = 0;
    context.err << "simulate: " << options.algorithm << ", " << options.model << " on " << platform.name << std::endl;
    for (const std::string& warning : platforms::platform_warnings(platform)) {
      context.err << "simulate: warning: " << warning << std::endl;
    }
    const auto points = simulate::simulate_weak_scaling(platform, options);

    auto results = new_results(context);
    char line[512];
    std::snprintf(line, sizeof line, "%8s %7s %6s %12s %10s %11s %11s %14s  %-8s %8s  %s\n", "workers", "ranks",
                  "nodes", "s/iteration", "efficiency", "exposed s", "overlap s", "bytes/it/worker", "fidelity",
                  "wall s", "mean rank's breakdown");
    context.out << line;
    for (const auto& point : points) {
      const Breakdown mean = mean_breakdown(point.per_rank);
      std::string shares;
      const double total = mean.total();
      for (std::size_t i = 0; i < mean.seconds.size(); ++i) {
        if (total > 0 && mean.seconds[i] / total >= 0.005) {
          char share[64];
          std::snprintf(share, sizeof share, "%s%s %.1f%%", shares.empty() ? "" : ", ",
                        std::string(kCategoryNames[i]).c_str(), 100 * mean.seconds[i] / total);
          shares += share;
        }
      }
      const std::string fidelity(simulate::to_string(point.fidelity));
      std::snprintf(line, sizeof line, "%8d %7d %6d %12.6g %9.1f%% %11.4g %11.4g %15.0f  %-8s %8.2f  %s\n",
                    point.workers, point.ranks, point.nodes, point.seconds_per_iteration, 100 * point.efficiency,
                    point.exposed_comm_s_per_iteration, point.overlapped_comm_s_per_iteration,
                    point.bytes_sent_per_iteration, fidelity.c_str(), point.wall_s, shares.c_str());
      context.out << line;
      context.err << "simulate: " << point.workers << " workers: compute priced by " << point.compute_pricing
                  << std::endl;

      results.benchmarks.push_back(simulate::to_entry(point, options, platform.name));
      if (!command->per_rank_csv.empty()) {
        reports::write_rank_breakdown_csv(numbered(command->per_rank_csv, point.workers), point.per_rank);
      }
      if (!command->trace.empty()) {
        reports::TraceLimits limits;
        limits.max_events = std::max<std::size_t>(1, options.trace_events);
        const auto summary =
            reports::write_chrome_trace(numbered(command->trace, point.workers), point.timeline, limits,
                                        {{"platform", platform.name},
                                         {"algorithm", options.algorithm},
                                         {"model", options.model},
                                         {"spans_not_recorded", std::to_string(point.timeline_dropped)}});
        context.err << "simulate: trace of " << point.workers << " workers: " << summary.events_written << " events ("
                    << summary.events_dropped + point.timeline_dropped << " left out)" << std::endl;
      }
    }
    if (!command->results.empty()) reports::write_results(command->results, results);
  });
}

}  // namespace dsgd::app
