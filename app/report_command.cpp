// `dsgd report`: results files -> report folder, per a manifest (the embedded default unless one is named).
#include <iostream>

#include "app/commands.hpp"
#include "reports/report.hpp"

namespace dsgd::app {

void register_report_command(CLI::App& app, Context& context) {
  auto* report = app.add_subcommand("report", "Render tables and figures from results files, as a manifest says");
  struct Options {
    std::string results_dir = "report/results";
    std::string out_dir = "report";
    std::string manifest;
  };
  auto options = std::make_shared<Options>();
  report->add_option("--results", options->results_dir, "Folder of results files named <experiment>.json")
      ->capture_default_str();
  report->add_option("--out", options->out_dir, "Report folder to write (index.md, tables/, figures/)")
      ->capture_default_str();
  report->add_option("--manifest", options->manifest, "Manifest JSON file (default: the embedded one)");
  report->callback([&context, options] {
    const auto manifest =
        options->manifest.empty() ? reports::default_manifest() : reports::read_manifest(options->manifest);
    reports::render_report(manifest, options->results_dir, options->out_dir,
                           [&](const reports::Experiment& e) { context.err << "report: rendering " << e.id << '\n'; });
    context.out << (std::filesystem::path(options->out_dir) / "index.md").string() << '\n';
  });
}

}  // namespace dsgd::app
