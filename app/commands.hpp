#pragma once
// The subcommands of `dsgd`, one file each (app/<name>_command.cpp), and what they share.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>
#include <string_view>

#include "app/run_common.hpp"
#include "core/interrupt.hpp"
#include "reports/results.hpp"

namespace dsgd::app {

// What every command gets from the entry point: where to print, and the command line for provenance.
struct Context {
  std::ostream& out;
  std::ostream& err;
  std::string command_line;  // e.g. "models --results report/results/models.json"
  // Requested by SIGINT / SIGTERM (core/interrupt.hpp); null: nothing interrupts. Commands hand it to the work that
  // can stop cleanly (run_process, the training runner).
  Interrupt* interrupt = nullptr;
};

void register_calibrate_command(CLI::App& app, Context& context);
void register_models_command(CLI::App& app, Context& context);
void register_platforms_command(CLI::App& app, Context& context);
void register_report_command(CLI::App& app, Context& context);
void register_plot_command(CLI::App& app, Context& context);
void register_bench_command(CLI::App& app, Context& context);
// `dsgd bench gemm` (app/bench_gemm_command.cpp), a subcommand of `bench`.
void register_bench_gemm_command(CLI::App& bench, Context& context);
// `dsgd bench transports` (app/bench_transports_command.cpp), likewise.
void register_bench_transports_command(CLI::App& bench, Context& context);
// `dsgd bench roofline` (app/bench_roofline_command.cpp), likewise.
void register_bench_roofline_command(CLI::App& bench, Context& context);
void register_bench_layers_command(CLI::App& bench, Context& context);
void register_train_command(CLI::App& app, Context& context);
// `dsgd train-gpt` (app/train_gpt_command.cpp): the byte-level GPT trained natively with 3-D parallelism.
void register_train_gpt_command(CLI::App& app, Context& context);
void register_reproduce_command(CLI::App& app, Context& context);
void register_run_command(CLI::App& app, Context& context);
void register_algorithms_command(CLI::App& app, Context& context);
void register_study_command(CLI::App& app, Context& context);
void register_simulate_command(CLI::App& app, Context& context);
// `dsgd simulate --study NAME` for a device study (algorithms::DeviceStudy; app/device_study_command.cpp): its
// table to context.out, its results to `results` unless empty.
void run_device_study(Context& context, const std::string& study, const std::string& results);
void register_accuracy_command(CLI::App& app, Context& context);
void register_validate_command(CLI::App& app, Context& context);
void register_shared_memory_command(CLI::App& app, Context& context);
void register_lost_updates_command(CLI::App& app, Context& context);
void register_lasso_command(CLI::App& app, Context& context);

// An empty results document with this run's provenance, executable and CPU count (run_common.hpp's, with the
// context's command line).
reports::Results new_results(const Context& context);

// Prints table `table_id` of experiment `experiment_id` of the embedded default manifest, filled from `results`,
// as fixed-width text: commands print exactly what the report shows.
void print_manifest_table(std::ostream& out, std::string_view experiment_id, std::string_view table_id,
                          const reports::Results& results);

}  // namespace dsgd::app
