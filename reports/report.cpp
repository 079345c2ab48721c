#include "reports/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace dsgd::reports {

namespace {

// Writes the report's files into `write_dir`, with links as seen from `out_dir` (where they will be moved).
void render_into(const Manifest& manifest, const std::filesystem::path& results_dir,
                 const std::filesystem::path& out_dir, const std::filesystem::path& write_dir,
                 const ReportProgress& progress) {
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

  for (const auto& experiment : manifest.experiments) {
    if (progress) progress(experiment);
    const auto results_path = results_dir / (experiment.id + ".json");
    const Results& results = results_of(experiment.id);
    const auto relative_results = std::filesystem::relative(results_path, out_dir).generic_string();
    provenance << "| " << experiment.id << " | [" << relative_results << "](" << relative_results << ") | "
               << results.provenance.dsgd_version << " | " << results.provenance.git_commit << " | "
               << results.provenance.host_name << " | " << results.provenance.date << " |\n";

    body << "## " << experiment.title << "\n\n" << experiment.description << "\n\n";
    body << "Produced by `dsgd " << results.provenance.command << "`.\n\n";
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
        const bool ran = std::any_of(manifest.experiments.begin(), manifest.experiments.end(),
                                     [&](const Experiment& e) { return e.id == series.from; });
        if (ran) others[series.from] = &results_of(series.from);
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
  for (std::size_t i = 0; i < manifest.experiments.size(); ++i) {
    index << (i ? ", " : "") << manifest.experiments[i].title;
  }
  index << ".\n\n" << body.str() << "## Provenance\n\n" << provenance.str();
  write_file_atomically(write_dir / "index.md", index.str());
}

}  // namespace

void render_report(const Manifest& manifest, const std::filesystem::path& results_dir,
                   const std::filesystem::path& out_dir, const ReportProgress& progress) {
  check_output_folder(out_dir);
  // Rendered beside the target and moved in at the end: a failed render leaves the old report as it was. ("out/"
  // names the folder "out": the staging folder goes beside it, not into it.)
  const std::filesystem::path target = out_dir.has_filename() ? out_dir : out_dir.parent_path();
  const std::filesystem::path staging = target.string() + ".rendering-" + std::to_string(::getpid());
  std::error_code ignored;
  std::filesystem::remove_all(staging, ignored);
  try {
    std::filesystem::create_directories(staging);
    render_into(manifest, results_dir, out_dir, staging, progress);
    std::filesystem::create_directories(out_dir);
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
