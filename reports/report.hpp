#pragma once
// Turns results files into a report folder: index.md with every experiment's tables (Markdown, plus CSV and LaTeX
// files) and figures (PNG and PDF through gnuplot). Reads results only; never runs anything but gnuplot.

#include <filesystem>
#include <functional>
#include <string>

#include "reports/manifest.hpp"

namespace dsgd::reports {

// Called once per experiment as it is rendered (for progress output).
using ReportProgress = std::function<void(const Experiment&)>;

// Reads <results_dir>/<experiment id>.json for each experiment of `manifest` and writes into `out_dir`:
// index.md, tables/<experiment>-<table>.{md,csv,tex}, figures/<experiment>-<figure>.{dat,gp,png,pdf}.
// A figure's series `from` another experiment read that experiment's results file too; an experiment missing from
// `manifest` (left out by `dsgd reproduce --only`) leaves its series out, with a note under the figure.
// Throws InputError naming a missing or malformed results file. Everything is rendered in a folder beside `out_dir`
// and moved in at the end (tables/, figures/, then index.md), so a failed render changes nothing at `out_dir`.
void render_report(const Manifest& manifest, const std::filesystem::path& results_dir,
                   const std::filesystem::path& out_dir, const ReportProgress& progress = {});

}  // namespace dsgd::reports
