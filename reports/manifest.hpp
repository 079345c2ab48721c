#pragma once
// A reproduction manifest: the experiments `dsgd reproduce` runs and how each one's results become tables and
// figures. It is data (JSON, docs/manifest-schema.md), so later work adds an experiment by adding an entry, and
// reports/ never needs to know how a result was produced: it reads results files named <experiment id>.json.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "reports/figure.hpp"
#include "reports/results.hpp"
#include "reports/table.hpp"

namespace dsgd::reports {

// Which value of a results entry a column or axis shows: "name", one of the dsgd fields ("executor", "model",
// "ranks", ...), "real_time", or a prefixed key: "counter:KEY", "label:KEY", "breakdown:CATEGORY", "option:KEY".
struct FieldRef {
  std::string text;  // as written, for messages
  // The value as text (numbers through the column's format), or nullopt when the entry lacks it.
  std::optional<std::string> text_of(const Entry& entry) const;
  // The numeric value, or nullopt when the entry lacks it or it is not a number.
  std::optional<double> number_of(const Entry& entry) const;
};

// The fields a reference may name without a prefix ("name", "executor", ...), and the prefixes of the others
// ("counter", "label", ...), for readers that resolve names of their own (reports/plot.hpp).
const std::vector<std::string>& plain_field_names();
const std::vector<std::string>& field_prefixes();

// Parses and checks a field reference written as the string `view`.
FieldRef parse_field_ref(const JsonView& view);
// Parses and checks `text` as a field reference; errors are reported at `view`.
FieldRef parse_field_ref(const std::string& text, const JsonView& view);

struct ColumnSpec {
  std::string header;
  FieldRef field;
  double scale = 1.0;  // numbers are multiplied by this before formatting
  std::string format;  // "" (text as is), "int" (rounded, thousands separated), or a printf "%.Nf"/"%.Ng"/"%.Ne"
};

// Selects entries: each (field, value) pair must match the field's text exactly. Empty: every entry.
struct RowFilter {
  std::vector<std::pair<FieldRef, std::string>> equals;
  bool accepts(const Entry& entry) const;
};

struct TableSpec {
  std::string id;
  std::string title;
  RowFilter where;
  std::vector<ColumnSpec> columns;
  std::vector<std::string> notes;
};

// One segment of a `stacked` figure's bars: a field of each entry, named in the legend.
struct StackSpec {
  std::string title;
  FieldRef field;
  std::string colour;  // "#rrggbb"; empty: the palette's
};

// One series of a figure (stacked: one bar per entry), where a figure compares values that are different fields
// (predicted and published) or come from different experiments (measured and predicted). Unset members fall back
// to the figure's.
struct SeriesSpec {
  std::string title;
  std::string from;  // the experiment whose results it plots; empty: the figure's own
  RowFilter where;   // in addition to the figure's `where`
  std::optional<FieldRef> x;
  std::optional<FieldRef> y;
  std::vector<StackSpec> stack;
  std::string colour;   // "#rrggbb" of its line, or (stacked, without a stack) of its one segment; empty: palette's
  bool dashed = false;  // lines: dashed with open shapes, e.g. to show a line that may lie on another one
};

struct FigureSpec {
  std::string id;
  std::string title;
  RowFilter where;
  std::string x_label;
  std::string y_label;
  PlotStyle style = PlotStyle::kLinesPoints;
  bool log_x = false;
  bool log_y = false;
  double x_scale = 1.0;               // numbers are multiplied by this before plotting
  double y_scale = 1.0;               // likewise, stacked values included
  FieldRef x;                         // bars, stacked: the category label; otherwise a number (unused with `curve`)
  std::optional<FieldRef> y;          // unset with `curve`, or where every series (or the stack) says what to plot
  std::optional<FieldRef> series_by;  // groups entries into series (title of each series)
  std::string curve;                  // if set: each entry's curve of this name is one series
  std::vector<StackSpec> stack;       // stacked: the segments of every bar, bottom first
  std::vector<SeriesSpec> series;     // empty: one series per series_by value (or per entry with `curve`)
  std::vector<std::string> notes;     // printed under the figure
};

// The file beside the results files where `dsgd reproduce` records each experiment's wall time and command
// (reports/report.hpp); an experiment may not be named so.
inline constexpr std::string_view kTimingsFileName = "timings.json";

struct Experiment {
  std::string id;  // also the results file name: <id>.json
  std::string title;
  std::string description;
  // The dsgd command that produces the results, with "{results}" standing for the results file path.
  std::vector<std::string> command;
  std::vector<TableSpec> tables;
  std::vector<FigureSpec> figures;
  // Wall time in seconds of its last measured run, for the plan `dsgd reproduce` prints; unset: not measured.
  std::optional<double> expected_s;
  // Part of the first look: what `dsgd reproduce` runs without `--all` or `--only`.
  bool first_look = false;
};

struct Manifest {
  std::string name;
  std::string title;
  std::vector<Experiment> experiments;
};

// Parses and validates a manifest (unknown fields, bad formats, unknown styles, duplicate ids, a negative or
// non-numeric expected_s are InputErrors).
Manifest parse_manifest(const Json& json, const std::string& source);
Manifest read_manifest(const std::filesystem::path& path);
// The manifest embedded in dsgd: what `dsgd reproduce` runs (its first look with no arguments, all with --all).
Manifest default_manifest();
// The experiments a plain `dsgd reproduce` runs, in manifest order: those marked first_look, or every one where the
// manifest marks none.
std::vector<Experiment> first_look(const Manifest& manifest);

// Formats one value as a column specifies; "—" when the entry lacks it.
std::string format_cell(const ColumnSpec& column, const Entry& entry);
// Builds a table or a figure from results.
Table build_table(const TableSpec& spec, const Results& results);
// Results of the manifest's experiments by id, for series that come `from` another experiment. An id missing
// here is an experiment that did not run (`dsgd reproduce --only`): its series are left out, and the figure's
// notes say so.
using ResultsById = std::map<std::string, const Results*>;
// Builds a figure from its experiment's results. Points a log axis cannot show (values <= 0) are left out and
// counted in the figure's notes, so one measured zero does not lose the whole report.
Figure build_figure(const FigureSpec& spec, const Results& results, const ResultsById& others = {});

}  // namespace dsgd::reports
