// `dsgd reproduce`: the main job. Runs the experiments of a manifest (each is a dsgd command writing one results
// file): its first look by default, every one with --all, the named ones with --only; prints the plan and a line as
// each starts and ends, records their wall times (results/timings.json), then renders the report. Everything is built
// in a staging folder beside the target and moved into place at the end, so a failed run leaves the previous report
// untouched and no half-written one.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iterator>

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

// The experiments this run takes from the manifest: --only's, every one (--all), or the manifest's first look; and a
// line saying which, for the plan.
std::pair<std::vector<reports::Experiment>, std::string> choose(const reports::Manifest& manifest,
                                                                const std::vector<std::string>& only, bool all) {
  const std::size_t count = manifest.experiments.size();
  if (!only.empty()) {
    std::vector<std::string> valid;
    for (const auto& e : manifest.experiments) valid.push_back(e.id);
    for (const auto& id : only) {
      if (std::find(valid.begin(), valid.end(), id) == valid.end()) throw UnknownNameError("experiment", id, valid);
    }
    std::vector<reports::Experiment> chosen;
    std::copy_if(manifest.experiments.begin(), manifest.experiments.end(), std::back_inserter(chosen),
                 [&](const reports::Experiment& e) { return std::find(only.begin(), only.end(), e.id) != only.end(); });
    return {chosen, "--only: " + std::to_string(chosen.size()) + " of " + std::to_string(count) + " experiments"};
  }
  auto chosen = all ? manifest.experiments : reports::first_look(manifest);
  if (chosen.size() == count) return {chosen, "all " + std::to_string(count) + " experiments"};
  return {chosen, "first look: " + std::to_string(chosen.size()) + " of " + std::to_string(count) +
                      " experiments (`dsgd reproduce --all` runs every one)"};
}

// What is left of a run, for the progress lines: the expected times of the experiments not yet done, scaled by how
// this run's finished experiments compare with theirs once they add up to enough to judge by (a busy or slower
// machine), and how many have no expected time.
class Remaining {
 public:
  explicit Remaining(const std::vector<reports::Experiment>& experiments) : experiments_(experiments) {}

  void finished(std::size_t index, double wall_s) {
    if (const auto expected = experiments_[index].expected_s) {
      expected_done_s_ += *expected;
      actual_done_s_ += wall_s;
    }
  }

  // Estimate for experiments [first, end).
  std::string from(std::size_t first) const {
    double expected_s = 0;
    std::size_t unmeasured = 0;
    for (std::size_t i = first; i < experiments_.size(); ++i) {
      if (const auto expected = experiments_[i].expected_s) {
        expected_s += *expected;
      } else {
        ++unmeasured;
      }
    }
    // Short experiments say little about the machine's pace: 30 s of expected time before it counts.
    const double pace = expected_done_s_ >= 30 ? actual_done_s_ / expected_done_s_ : 1.0;
    std::string text = "about " + reports::duration_text(expected_s * pace) + " left";
    if (unmeasured > 0) text += " + " + std::to_string(unmeasured) + " unmeasured";
    return text;
  }

 private:
  const std::vector<reports::Experiment>& experiments_;
  double expected_done_s_ = 0;
  double actual_done_s_ = 0;
};

std::string expected_text(const reports::Experiment& experiment) {
  return experiment.expected_s ? reports::duration_text(*experiment.expected_s) : "?";
}

// The plan, before anything runs: each experiment with its expected wall time, and the total.
void print_plan(std::ostream& err, const std::vector<reports::Experiment>& experiments, const std::string& selection) {
  std::size_t width = 0;
  double total_s = 0;
  std::size_t unmeasured = 0;
  for (const auto& e : experiments) {
    width = std::max(width, e.id.size());
    total_s += e.expected_s.value_or(0);
    unmeasured += e.expected_s ? 0 : 1;
  }
  err << "dsgd reproduce: " << selection << ", expected wall time on 2 cores (? = not measured):\n";
  for (const auto& e : experiments) {
    err << "  " << std::left << std::setw(static_cast<int>(width)) << e.id << "  " << std::right << std::setw(12)
        << expected_text(e) << "\n";
  }
  err << "  " << std::left << std::setw(static_cast<int>(width)) << "total"
      << "  " << std::right << std::setw(12) << reports::duration_text(total_s);
  if (unmeasured > 0) err << " + " << unmeasured << " unmeasured";
  err << std::endl;
}

}  // namespace

void register_reproduce_command(CLI::App& app, Context& context) {
  auto* reproduce = app.add_subcommand(
      "reproduce", "The main job: run the manifest's first look (--all: every experiment) and write report/index.md");
  struct Options {
    std::string out_dir = "report";
    std::string manifest;
    std::vector<std::string> only;
    bool all = false;
    std::string size = "reduced";
  };
  auto options = std::make_shared<Options>();
  reproduce->add_option("--out", options->out_dir, "Report folder to (re)write")->capture_default_str();
  reproduce->add_option("--manifest", options->manifest, "Manifest JSON file (default: the embedded one)");
  auto* only = reproduce->add_option("--only", options->only, "Run only these experiment ids (any of the manifest)");
  reproduce->add_flag("--all", options->all, "Run every experiment (default: the manifest's first look)")
      ->excludes(only);
  reproduce->add_option("--size", options->size, "Data sizes where an experiment has two: reduced or full")
      ->check(CLI::IsMember({"reduced", "full"}))
      ->capture_default_str();
  reproduce->callback([&context, options] {
    const auto manifest =
        options->manifest.empty() ? reports::default_manifest() : reports::read_manifest(options->manifest);
    const auto [experiments, selection] = choose(manifest, options->only, options->all);

    const std::filesystem::path target = options->out_dir;
    // Before an hour of experiments, not after: the report and the one it keeps as the previous must be dsgd's.
    check_output_folder(target);
    check_output_folder(previous_of(target));
    // Staging folders of runs killed before they could clean up (their process is gone).
    remove_stale_folders(target, ".staging-");
    const std::filesystem::path staging = target.string() + ".staging-" + std::to_string(::getpid());
    check_output_folder(staging);
    std::filesystem::remove_all(staging);  // an owned leftover of a process with this pid
    mark_as_owned(staging);
    const auto results_dir = staging / "results";
    std::filesystem::create_directories(results_dir);

    print_plan(context.err, experiments, selection);
    // How to rerun one experiment alone: the options of this run that change what it does.
    std::string rerun_options;
    if (!options->manifest.empty()) rerun_options += " --manifest " + options->manifest;
    if (options->size != "reduced") rerun_options += " --size " + options->size;

    NullBuffer null_buffer;
    std::ostream null_out(&null_buffer);
    const auto total = experiments.size();
    const auto run_start = std::chrono::steady_clock::now();
    const auto elapsed_s = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    };
    Remaining remaining(experiments);
    std::vector<reports::ExperimentTiming> timings;
    try {
      for (std::size_t i = 0; i < total; ++i) {
        const auto& experiment = experiments[i];
        if (experiment.command.front() == "reproduce") {
          throw InputError("experiment '" + experiment.id + "': a manifest command cannot be `reproduce`");
        }
        const std::string file = experiment.id + ".json";
        const auto args = substitute(experiment.command, (results_dir / file).string(), options->size);
        std::string shown;
        for (const auto& arg : substitute(experiment.command, (target / "results" / file).string(), options->size)) {
          shown += (shown.empty() ? "" : " ") + arg;
        }
        const std::string step = "[" + std::to_string(i + 1) + "/" + std::to_string(total) + "] " + experiment.id;
        context.err << step << ": start, expected " << expected_text(experiment) << " (elapsed "
                    << reports::duration_text(elapsed_s()) << ", " << remaining.from(i) << "): dsgd " << shown
                    << std::endl;
        const auto start = std::chrono::steady_clock::now();
        const int code = run(args, null_out, context.err, shown, context.interrupt);
        if (context.interrupt != nullptr && context.interrupt->requested()) {
          throw InterruptedError(context.interrupt->signal(), "stopped at experiment '" + experiment.id + "'");
        }
        const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (code != kExitOk) {
          throw Error("experiment '" + experiment.id + "' failed (exit code " + std::to_string(code) + ")");
        }
        remaining.finished(i, wall_s);
        timings.push_back(
            {experiment.id, wall_s, "dsgd " + shown, "dsgd reproduce --only " + experiment.id + rerun_options});
        context.err << step << ": done in " << reports::duration_text(wall_s) << " (elapsed "
                    << reports::duration_text(elapsed_s()) << ", " << remaining.from(i + 1) << ")" << std::endl;
      }
      reports::write_timings(results_dir / reports::kTimingsFileName, timings);
      context.err << "rendering the report (" << total << " experiments in " << reports::duration_text(elapsed_s())
                  << ")" << std::endl;
      reports::render_report(manifest, results_dir, staging);
      replace_folder_keeping_previous(staging, target);
    } catch (...) {
      std::error_code ignored;
      std::filesystem::remove_all(staging, ignored);
      throw;
    }
    context.out << (target / "index.md").string() << '\n';
  });
}

}  // namespace dsgd::app
