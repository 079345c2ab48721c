#include "app/cli.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

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

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// CLI11 reports an unknown subcommand as a stray positional, or as a missing one; check the leading words first so
// the error names the command, suggests the nearest and lists the valid ones.
void check_subcommands(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  std::string path = "dsgd";
  for (const std::string& word : args) {
    if (word.empty() || word[0] == '-') return;
    const std::vector<std::string> valid = subcommand_names(*at);
    // A command without commands of its own takes its words as values.
    if (valid.empty() || !at->get_options([](const CLI::Option* option) { return option->get_positional(); }).empty()) {
      return;
    }
    if (std::find(valid.begin(), valid.end(), word) == valid.end()) {
      throw UnknownNameError(path == "dsgd" ? "command" : path + " command", word, valid);
    }
    at = at->get_subcommand(word);
    path += " " + word;
  }
}

// The command the parse reached, "dsgd" or e.g. "dsgd bench transports": where its help is.
const CLI::App* reached_command(const CLI::App& app, std::string& path) {
  const CLI::App* at = &app;
  path = "dsgd";
  for (auto parsed = at->get_subcommands(); !parsed.empty(); parsed = at->get_subcommands()) {
    at = parsed.front();
    path += " " + at->get_name();
  }
  return at;
}

// A parse error in words a user can act on: an option the command does not have gets the nearest it has, a missing
// command the list, and every message the help of the command it concerns.
std::string usage_message(const CLI::App& app, const CLI::ParseError& error) {
  std::string path;
  const CLI::App* command = reached_command(app, path);
  const std::string help = " (run `" + path + " --help`)";
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    std::vector<std::string> names;
    for (const CLI::Option* option : command->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    }
    for (const std::string& word : command->remaining()) {
      if (word.rfind("--", 0) != 0) continue;
      const std::string unknown = word.substr(0, word.find('='));
      std::string message = path + ": unknown option " + unknown;
      if (const auto near = nearest_name(unknown, names)) message += "; did you mean " + *near + "?";
      return message + help;
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && command->get_require_subcommand_min() > 0 &&
      command->get_subcommands().empty()) {
    std::string message = path + " needs a command: " + join(subcommand_names(*command));
    const std::vector<std::string> rest = command->remaining();
    if (!rest.empty() && rest.front().rfind("-", 0) == 0)
      message += "; " + rest.front() + " is not an option of " + path;
    return message + help;
  }
  return std::string(error.what()) + help;
}

}  // namespace

reports::Results new_results(const Context& context) { return new_results(context.command_line); }

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
  register_plot_command(app, context);
  register_bench_command(app, context);
  register_train_command(app, context);
  register_train_gpt_command(app, context);
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
    check_subcommands(app, args);
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
    err << "dsgd: " << usage_message(app, e) << '\n';
    return kExitUsage;
  } catch (const InterruptedError& e) {
    err << "dsgd: " << e.what() << '\n';
    return 128 + e.signal();
  } catch (const std::exception& e) {
    const ErrorOutcome outcome = outcome_of(e);
    // One line an error; a file with several (a platform file) gives each its own line, each marked as dsgd's.
    std::istringstream lines(outcome.message);
    for (std::string line; std::getline(lines, line);) err << "dsgd: " << line << '\n';
    return outcome.exit_code;
  }
}

}  // namespace dsgd::app
