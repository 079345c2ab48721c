#pragma once
// `dsgd plot`: a figure straight from one or more results files, without a manifest (docs/plot.md). Fields are
// named as a user reads them in a results file (`ranks`, `efficiency`, `test_accuracy`); series are told apart by
// the fields whose values differ between the entries drawn (algorithm, platform, executor, ...), so legends read
// "sync-sgd, simgrid" rather than run ids.

#include <string>
#include <vector>

#include "reports/figure.hpp"
#include "reports/results.hpp"

namespace dsgd::reports {

// One results file and the name the pseudo-field `file` gives its entries (the file's stem).
struct NamedResults {
  std::string name;
  Results results;
};

struct PlotRequest {
  // A field: one of manifest.hpp's plain fields, a prefixed one ("counter:KEY", ...), the pseudo-field `file`, or a
  // bare counter, label, breakdown category or algorithm option (looked up in that order); `algo` is `algorithm`.
  // Empty with a curve y: the curve's own x (time, iterations).
  std::string x;
  // A field as above, or a curve of the entries by its name ("test_accuracy") or its y label ("error"); with a
  // curve, x picks among curves of that y by their x label ("time_s", "iteration").
  std::string y;
  std::vector<std::string> series;  // fields whose values name a series; empty: those whose values differ
  std::vector<std::string> where;   // "FIELD=VALUE": only entries whose field reads VALUE
  PlotStyle style = PlotStyle::kLinesPoints;
  bool log_x = false;
  bool log_y = false;
  std::string title;  // empty: "Y against X"
  std::string x_label;
  std::string y_label;
};

// Builds the figure; throws InputError naming the option (--x, --y, --series, --where) for a field no entry has,
// with the nearest name, and when no entry of any file has a value to draw.
Figure plot_figure(const std::vector<NamedResults>& files, const PlotRequest& request);

}  // namespace dsgd::reports
