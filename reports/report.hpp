#pragma once
// Turns results files into a report folder: index.md with every experiment's tables (Markdown, plus CSV and LaTeX
// files) and figures (PNG and PDF through gnuplot). Reads results only; never runs anything but gnuplot.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "reports/manifest.hpp"

namespace dsgd::reports {

// One experiment as `dsgd reproduce` ran it, recorded in <results>/timings.json (kTimingsFileName) as
// {"experiments": [{"id", "wall_s", "command", "reproduce"}, ...]}, in the order they ran.
struct ExperimentTiming {
  std::string id;
  double wall_s = 0;
  std::string command;    // its own command line, results path included: "dsgd models --results report/results/..."
  std::string reproduce;  // the reproduce command that runs it alone: "dsgd reproduce --only models"
};

// Writes the timings file whole or not at all (core/atomic_file.hpp).
void write_timings(const std::filesystem::path& path, const std::vector<ExperimentTiming>& timings);
// Throws InputError naming the file and the JSON path of a missing or malformed field.
std::vector<ExperimentTiming> read_timings(const std::filesystem::path& path);

// A wall time for people: "0.4 s", "42 s", "7 min 05 s", "1 h 52 min".
std::string duration_text(double seconds);

// Called once per experiment as it is rendered (for progress output).
using ReportProgress = std::function<void(const Experiment&)>;

// Reads <results_dir>/<experiment id>.json for each experiment of `manifest` that ran and writes into `out_dir`:
// index.md (a table of the experiments' wall times and commands, then a section per experiment),
// tables/<experiment>-<table>.{md,csv,tex}, figures/<experiment>-<figure>.{dat,gp,png,pdf}.
// The experiments that ran are those of <results_dir>/timings.json where `dsgd reproduce` wrote one (the others are
// listed as not run), or else every experiment of `manifest`, with no wall times. A figure's series `from` another
// experiment read that experiment's results file too; one that did not run leaves its series out, with a note.
// Throws InputError naming a missing or malformed results or timings file, or a timed experiment `manifest` lacks.
// Everything is rendered in a folder beside `out_dir` and moved in at the end (tables/, figures/, then index.md), so a
// failed render changes nothing at `out_dir`.
void render_report(const Manifest& manifest, const std::filesystem::path& results_dir,
                   const std::filesystem::path& out_dir, const ReportProgress& progress = {});

}  // namespace dsgd::reports
