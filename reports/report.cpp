#include "reports/report.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace dsgd::reports {

void render_report(const Manifest& manifest, const std::filesystem::path& results_dir,
                   const std::filesystem::path& out_dir, const ReportProgress& progress) {
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
      write_file_atomically(out_dir / (stem + ".md"), to_markdown(table));
      write_file_atomically(out_dir / (stem + ".csv"), to_csv(table));
      write_file_atomically(out_dir / (stem + ".tex"), to_latex(table));
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
        render_figure(figure, out_dir / stem);
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
  write_file_atomically(out_dir / "index.md", index.str());
}

}  // namespace dsgd::reports
