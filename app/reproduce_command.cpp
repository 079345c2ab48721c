// `dsgd reproduce`: the main job. Runs every experiment of a manifest (each is a dsgd command writing one results
// file), then renders the report. Everything is built in a staging folder beside the target and moved into place
// at the end, so a failed run leaves the previous report untouched and no half-written one.
#include <unistd.h>

#include <chrono>
#include <iomanip>

#include "app/cli.hpp"
#include "app/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "reports/report.hpp"

namespace dsgd::app {

namespace {

// A stream that swallows output: nested commands' tables are not wanted on the terminal during reproduce.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
};

// The manifest's placeholders: "{results}" (the experiment's results file) and "{size}" (`--size`: the data sizes of
// experiments that have a reduced and a full form, reduced by default so the whole job stays minutes long).
std::vector<std::string> substitute(const std::vector<std::string>& command, const std::string& results,
                                    const std::string& size) {
  std::vector<std::string> args;
  for (std::string arg : command) {
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"{results}", results}, {"{size}", size}}) {
      for (auto pos = arg.find(key); pos != std::string::npos; pos = arg.find(key, pos)) {
        arg.replace(pos, key.size(), value);
        pos += value.size();
      }
    }
    args.push_back(arg);
  }
  return args;
}

}  // namespace

void register_reproduce_command(CLI::App& app, Context& context) {
  auto* reproduce = app.add_subcommand(
      "reproduce", "The main job: run every experiment of the manifest and write the report (report/index.md)");
  struct Options {
    std::string out_dir = "report";
    std::string manifest;
    std::vector<std::string> only;
    std::string size = "reduced";
  };
  auto options = std::make_shared<Options>();
  reproduce->add_option("--out", options->out_dir, "Report folder to (re)write")->capture_default_str();
  reproduce->add_option("--manifest", options->manifest, "Manifest JSON file (default: the embedded one)");
  reproduce->add_option("--only", options->only, "Run only these experiment ids");
  reproduce->add_option("--size", options->size, "Data sizes where an experiment has two: reduced or full")
      ->check(CLI::IsMember({"reduced", "full"}))
      ->capture_default_str();
  reproduce->callback([&context, options] {
    auto manifest = options->manifest.empty() ? reports::default_manifest() : reports::read_manifest(options->manifest);
    if (!options->only.empty()) {
      std::vector<std::string> valid;
      for (const auto& e : manifest.experiments) valid.push_back(e.id);
      for (const auto& id : options->only) {
        if (std::find(valid.begin(), valid.end(), id) == valid.end()) throw UnknownNameError("experiment", id, valid);
      }
      std::erase_if(manifest.experiments, [&](const reports::Experiment& e) {
        return std::find(options->only.begin(), options->only.end(), e.id) == options->only.end();
      });
    }

    const std::filesystem::path target = options->out_dir;
    check_output_folder(target);  // before an hour of experiments, not after
    const std::filesystem::path staging = target.string() + ".staging-" + std::to_string(::getpid());
    std::filesystem::remove_all(staging);
    const auto results_dir = staging / "results";
    std::filesystem::create_directories(results_dir);

    NullBuffer null_buffer;
    std::ostream null_out(&null_buffer);
    const auto total = manifest.experiments.size();
    try {
      for (std::size_t i = 0; i < total; ++i) {
        const auto& experiment = manifest.experiments[i];
        if (experiment.command.front() == "reproduce") {
          throw InputError("experiment '" + experiment.id + "': a manifest command cannot be `reproduce`");
        }
        const std::string file = experiment.id + ".json";
        const auto args = substitute(experiment.command, (results_dir / file).string(), options->size);
        std::string shown;
        for (const auto& arg : substitute(experiment.command, (target / "results" / file).string(), options->size)) {
          shown += (shown.empty() ? "" : " ") + arg;
        }
        context.err << "[" << i + 1 << "/" << total << "] " << experiment.id << ": dsgd " << shown << std::endl;
        const auto start = std::chrono::steady_clock::now();
        const int code = run(args, null_out, context.err, shown, context.interrupt);
        if (context.interrupt != nullptr && context.interrupt->requested()) {
          throw InterruptedError(context.interrupt->signal(), "stopped at experiment '" + experiment.id + "'");
        }
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        if (code != kExitOk) {
          throw Error("experiment '" + experiment.id + "' failed (exit code " + std::to_string(code) + ")");
        }
        context.err << "      done in " << std::fixed << std::setprecision(2) << elapsed.count() << " s" << std::endl;
      }
      context.err << "rendering the report" << std::endl;
      reports::render_report(manifest, results_dir, staging);
      move_into_place(staging, target);
    } catch (...) {
      std::error_code ignored;
      std::filesystem::remove_all(staging, ignored);
      throw;
    }
    context.out << (target / "index.md").string() << '\n';
  });
}

}  // namespace dsgd::app
