#include "app/cli.hpp"

#include <algorithm>
#include <iostream>

#include "app/commands.hpp"
#include "app/run_common.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "dsgd/config.hpp"
#include "measure/host_info.hpp"
#include "reports/manifest.hpp"
#include "simulate/simgrid_info.hpp"

namespace dsgd::app {

namespace {

std::string version_text() {
  std::string text = "dsgd " DSGD_VERSION " (commit " DSGD_GIT_COMMIT ")\n";
  text += "SimGrid " + simulate::simgrid_runtime_version() + ", CUDA back end " +
          (measure::cuda_built() ? "built" : "not built");
  if (measure::cuda_built()) text += " (" + std::to_string(measure::cuda_devices().size()) + " device(s) visible)";
  return text;
}

// CLI11 reports an unknown subcommand as a stray positional; check it first so the error lists the valid ones.
void check_subcommand(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty() || args.front().empty() || args.front()[0] == '-') return;
  std::vector<std::string> valid;
  for (const auto* sub : app.get_subcommands({})) valid.push_back(sub->get_name());
  if (std::find(valid.begin(), valid.end(), args.front()) == valid.end()) {
    throw UnknownNameError("command", args.front(), valid);
  }
}

}  // namespace

reports::Results new_results(const Context& context) { return new_results(context.command_line); }

reports::Entry catalog_entry(const std::string& name, const std::string& kind, const std::string& description) {
  reports::Entry entry;
  entry.name = name;
  entry.executor = "catalog";
  entry.fidelity = "static";
  entry.labels["kind"] = kind;
  entry.labels["description"] = description;
  return entry;
}

void print_manifest_table(std::ostream& out, std::string_view experiment_id, std::string_view table_id,
                          const reports::Results& results) {
  const auto manifest = reports::default_manifest();
  for (const auto& experiment : manifest.experiments) {
    if (experiment.id != experiment_id) continue;
    for (const auto& spec : experiment.tables) {
      if (spec.id == table_id) {
        out << reports::to_text(reports::build_table(spec, results));
        return;
      }
    }
  }
  throw InternalError("the default manifest lacks table " + std::string(experiment_id) + "/" + std::string(table_id));
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const std::string& shown_command,
        Interrupt* interrupt) {
  std::string command_line = shown_command;
  if (command_line.empty()) {
    for (const auto& arg : args) command_line += (command_line.empty() ? "" : " ") + arg;
  }
  Context context{out, err, command_line, interrupt};

  CLI::App app{"dsgd: measure distributed SGD natively, simulate it at scale, report it for papers", "dsgd"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::function<std::string()>(version_text), "Print version, commit and back ends");
  app.footer(
      "Run `dsgd COMMAND --help` for a command's options. Exit codes: 0 ok, 1 failure, 2 usage or input "
      "error, 3 internal error.");
  register_calibrate_command(app, context);
  register_models_command(app, context);
  register_platforms_command(app, context);
  register_report_command(app, context);
  register_bench_command(app, context);
  register_train_command(app, context);
  register_reproduce_command(app, context);
  register_algorithms_command(app, context);
  register_run_command(app, context);
  register_study_command(app, context);
  register_simulate_command(app, context);
  register_accuracy_command(app, context);
  register_validate_command(app, context);
  register_shared_memory_command(app, context);
  register_lost_updates_command(app, context);
  register_lasso_command(app, context);

  try {
    check_subcommand(app, args);
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last-first
    app.parse(reversed);
    if (interrupt != nullptr && interrupt->requested()) {
      // The signal came as the work ended: the user still asked to stop.
      throw InterruptedError(interrupt->signal(), "the command had finished");
    }
    return kExitOk;
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    out << version_text() << '\n';
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    err << "dsgd: " << e.what() << " (run `dsgd --help`)\n";
    return kExitUsage;
  } catch (const InterruptedError& e) {
    err << "dsgd: " << e.what() << '\n';
    return 128 + e.signal();
  } catch (const std::exception& e) {
    const ErrorOutcome outcome = outcome_of(e);
    err << "dsgd: " << outcome.message << '\n';
    return outcome.exit_code;
  }
}

}  // namespace dsgd::app
