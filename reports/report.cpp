#include "reports/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/json.hpp"

namespace dsgd::reports {

namespace {

// The experiments of `manifest` that ran, in manifest order, with their timings where `dsgd reproduce` recorded them.
struct Ran {
  std::vector<const Experiment*> experiments;
  std::map<std::string, ExperimentTiming> timings;  // by id; empty without a timings file
  std::vector<std::string> not_run;                 // ids of the manifest's other experiments
  bool timed = false;                               // whether a timings file was found
};

Ran experiments_that_ran(const Manifest& manifest, const std::filesystem::path& results_dir) {
  Ran ran;
  const auto timings_path = results_dir / kTimingsFileName;
  ran.timed = std::filesystem::exists(timings_path);
  if (ran.timed) {
    for (auto& timing : read_timings(timings_path)) {
      const bool known = std::any_of(manifest.experiments.begin(), manifest.experiments.end(),
                                     [&](const Experiment& e) { return e.id == timing.id; });
      if (!known) {
        throw InputError(timings_path.string() + ": experiment '" + timing.id + "' is not in manifest '" +
                         manifest.name + "'");
      }
      ran.timings.emplace(timing.id, std::move(timing));
    }
  }
  for (const auto& experiment : manifest.experiments) {
    if (!ran.timed || ran.timings.count(experiment.id)) {
      ran.experiments.push_back(&experiment);
    } else {
      ran.not_run.push_back(experiment.id);
    }
  }
  return ran;
}

// The summary at the top of index.md: what ran, how long each took and the command that reruns it alone.
std::string summary(const Ran& ran) {
  std::ostringstream out;
  if (!ran.not_run.empty()) {
    out << "Not run in this report (" << ran.not_run.size() << " of " << ran.experiments.size() + ran.not_run.size()
        << " experiments): ";
    for (std::size_t i = 0; i < ran.not_run.size(); ++i) out << (i ? ", " : "") << ran.not_run[i];
    out << ". `dsgd reproduce --all` runs every experiment.\n\n";
  }
  out << "| experiment | wall time | command |\n| --- | ---: | --- |\n";
  double total_s = 0;
  for (const Experiment* experiment : ran.experiments) {
    const auto timing = ran.timings.find(experiment->id);
    const bool timed = timing != ran.timings.end();
    if (timed) total_s += timing->second.wall_s;
    out << "| " << experiment->id << " | " << (timed ? duration_text(timing->second.wall_s) : "—") << " | `"
        << (timed ? timing->second.reproduce : "dsgd reproduce --only " + experiment->id) << "` |\n";
  }
  if (ran.timed) out << "| total | " << duration_text(total_s) << " | |\n";
  out << "\n";
  if (!ran.timed) out << "Wall times: not recorded (these results were not written by `dsgd reproduce`).\n\n";
  return out.str();
}

// Writes the report's files into `write_dir`, with links as seen from `out_dir` (where they will be moved).
void render_into(const Manifest& manifest, const std::filesystem::path& results_dir,
                 const std::filesystem::path& out_dir, const std::filesystem::path& write_dir,
                 const ReportProgress& progress) {
  const Ran ran = experiments_that_ran(manifest, results_dir);
  std::ostringstream index;
  index << "# " << manifest.title << "\n\n";
  std::ostringstream body;
  std::ostringstream provenance;
  provenance << "| experiment | results file | dsgd | commit | host | date |\n| --- | --- | --- | --- | --- | --- |\n";

  // Results by experiment id, each read once: a figure may plot another experiment's results beside its own.
  std::map<std::string, Results> loaded;
  const auto results_of = [&](const std::string& id) -> const Results& {
    if (const auto found = loaded.find(id); found != loaded.end()) return found->second;
    const auto results_path = results_dir / (id + ".json");
    if (!std::filesystem::exists(results_path)) {
      throw InputError(results_path.string() + ": missing results file for experiment '" + id + "'");
    }
    return loaded.emplace(id, read_results(results_path)).first->second;
  };

  for (const Experiment* ran_experiment : ran.experiments) {
    const Experiment& experiment = *ran_experiment;
    if (progress) progress(experiment);
    const auto results_path = results_dir / (experiment.id + ".json");
    const Results& results = results_of(experiment.id);
    const auto relative_results = std::filesystem::relative(results_path, out_dir).generic_string();
    provenance << "| " << experiment.id << " | [" << relative_results << "](" << relative_results << ") | "
               << results.provenance.dsgd_version << " | " << results.provenance.git_commit << " | "
               << results.provenance.host_name << " | " << results.provenance.date << " |\n";

    body << "## " << experiment.title << "\n\n" << experiment.description << "\n\n";
    body << "Produced by `dsgd " << results.provenance.command << "`";
    if (const auto timing = ran.timings.find(experiment.id); timing != ran.timings.end()) {
      body << " in " << duration_text(timing->second.wall_s) << " of wall time; `" << timing->second.reproduce
           << "` reruns it alone.\n\n";
    } else {
      body << "; `dsgd reproduce --only " << experiment.id << "` reruns it alone.\n\n";
    }
    for (const auto& spec : experiment.tables) {
      const Table table = build_table(spec, results);
      const std::string stem = "tables/" + experiment.id + "-" + spec.id;
      write_file_atomically(write_dir / (stem + ".md"), to_markdown(table));
      write_file_atomically(write_dir / (stem + ".csv"), to_csv(table));
      write_file_atomically(write_dir / (stem + ".tex"), to_latex(table));
      body << to_markdown(table) << "\n("
           << "[CSV](" << stem << ".csv), [LaTeX](" << stem << ".tex))\n\n";
    }
    for (const auto& spec : experiment.figures) {
      // Another experiment's series can be drawn only if that experiment is part of this report (it ran).
      ResultsById others;
      for (const auto& series : spec.series) {
        const bool series_ran = std::any_of(ran.experiments.begin(), ran.experiments.end(),
                                            [&](const Experiment* e) { return e->id == series.from; });
        if (series_ran) others[series.from] = &results_of(series.from);
      }
      const Figure figure = build_figure(spec, results, others);
      const std::string stem = "figures/" + experiment.id + "-" + spec.id;
      // A measured run can leave a figure nothing to draw (every loss 0 on a log axis, one thread on a one-core
      // machine): the report says so rather than failing after every experiment has run.
      const bool drawn = has_data(figure);
      if (drawn) {
        render_figure(figure, write_dir / stem);
        body << "![" << spec.title << "](" << stem << ".png)\n\n";
      } else {
        body << "Figure not drawn, as these results give it no point: " << spec.title << ".\n\n";
      }
      for (const auto& note : spec.notes) body << note << "\n\n";
      for (const auto& note : figure.notes) body << note << "\n\n";
      if (drawn) {
        body << "([PDF](" << stem << ".pdf), [data](" << stem << ".dat), [gnuplot script](" << stem << ".gp))\n\n";
      }
    }
  }
  index << "Experiments: ";
  for (std::size_t i = 0; i < ran.experiments.size(); ++i) index << (i ? ", " : "") << ran.experiments[i]->title;
  index << ".\n\n" << summary(ran) << body.str() << "## Provenance\n\n" << provenance.str();
  write_file_atomically(write_dir / "index.md", index.str());
}

}  // namespace

void write_timings(const std::filesystem::path& path, const std::vector<ExperimentTiming>& timings) {
  Json experiments = Json::array();
  for (const auto& timing : timings) {
    experiments.push_back(
        {{"id", timing.id}, {"wall_s", timing.wall_s}, {"command", timing.command}, {"reproduce", timing.reproduce}});
  }
  write_file_atomically(path, Json{{"experiments", experiments}}.dump(2) + "\n");
}

std::vector<ExperimentTiming> read_timings(const std::filesystem::path& path) {
  const Json json = read_json_file(path);
  const JsonView root(json, path.string());
  root.allow_only({"experiments"});
  const JsonView experiments = root.at("experiments");
  std::vector<ExperimentTiming> timings;
  for (std::size_t i = 0; i < experiments.size(); ++i) {
    const JsonView view = experiments.at(i);
    view.allow_only({"id", "wall_s", "command", "reproduce"});
    timings.push_back({view.at("id").string(), view.at("wall_s").nonnegative(), view.at("command").string(),
                       view.at("reproduce").string()});
  }
  return timings;
}

std::string duration_text(double seconds) {
  if (seconds < 9.95) return fixed(seconds, 1) + " s";
  const long long whole = std::llround(seconds);
  if (whole < 60) return std::to_string(whole) + " s";
  if (whole < 3600) return format("%lld min %02lld s", whole / 60, whole % 60);
  const long long minutes = (whole + 30) / 60;
  return format("%lld h %02lld min", minutes / 60, minutes % 60);
}

void render_report(const Manifest& manifest, const std::filesystem::path& results_dir,
                   const std::filesystem::path& out_dir, const ReportProgress& progress) {
  check_output_folder(out_dir);
  // tables/ and figures/ are replaced as a whole: results read from inside them would be deleted with them.
  std::error_code ignored;
  const auto results = std::filesystem::weakly_canonical(results_dir, ignored);
  for (const char* part : {"tables", "figures"}) {
    const auto replaced = std::filesystem::weakly_canonical(out_dir / part, ignored);
    const auto [end, at] = std::mismatch(replaced.begin(), replaced.end(), results.begin(), results.end());
    if (end == replaced.end()) {
      throw InputError(results_dir.string() + ": the results are inside " + (out_dir / part).string() +
                       ", which the report replaces: write the report to another folder");
    }
  }
  // Rendered beside the target and moved in at the end: a failed render leaves the old report as it was. ("out/"
  // names the folder "out": the staging folder goes beside it, not into it.)
  const std::filesystem::path target = out_dir.has_filename() ? out_dir : out_dir.parent_path();
  remove_stale_folders(target, ".rendering-");
  const std::filesystem::path staging = target.string() + ".rendering-" + std::to_string(::getpid());
  check_output_folder(staging);
  std::filesystem::remove_all(staging, ignored);
  try {
    mark_as_owned(staging);
    render_into(manifest, results_dir, out_dir, staging, progress);
    mark_as_owned(out_dir);
    for (const char* part : {"tables", "figures"}) {
      if (std::filesystem::exists(staging / part)) move_into_place(staging / part, out_dir / part);
    }
    move_into_place(staging / "index.md", out_dir / "index.md");
  } catch (...) {
    std::filesystem::remove_all(staging, ignored);
    throw;
  }
  std::filesystem::remove_all(staging, ignored);
}

}  // namespace dsgd::reports
