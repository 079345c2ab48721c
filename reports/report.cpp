#include "reports/report.hpp"

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

  for (const auto& experiment : manifest.experiments) {
    if (progress) progress(experiment);
    const auto results_path = results_dir / (experiment.id + ".json");
    if (!std::filesystem::exists(results_path)) {
      throw InputError(results_path.string() + ": missing results file for experiment '" + experiment.id + "'");
    }
    const Results results = read_results(results_path);
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
      const std::string stem = "figures/" + experiment.id + "-" + spec.id;
      render_figure(build_figure(spec, results), out_dir / stem);
      body << "![" << spec.title << "](" << stem << ".png)\n\n("
           << "[PDF](" << stem << ".pdf), [data](" << stem << ".dat), [gnuplot script](" << stem << ".gp))\n\n";
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
