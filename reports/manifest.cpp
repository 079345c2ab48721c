#include "reports/manifest.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <regex>
#include <set>

#include "core/error.hpp"
#include "core/format.hpp"
#include "reports/embedded_manifests.hpp"

namespace dsgd::reports {

namespace {

const std::vector<std::string> kPlainFields = {"name",      "executor",  "fidelity", "platform",
                                               "algorithm", "model",     "dataset",  "ranks",
                                               "seed",      "real_time", "cpu_time", "iterations"};
const std::vector<std::string> kPrefixes = {"counter", "label", "breakdown", "option"};

std::string thousands(double value) {
  const long long rounded = std::llround(value);
  std::string digits = std::to_string(rounded < 0 ? -rounded : rounded);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return (rounded < 0 ? "-" : "") + digits;
}

std::string optional_text(const JsonView& view, const char* key) {
  const auto found = view.find(key);
  return found ? found->string() : std::string();
}

bool optional_flag(const JsonView& view, const char* key) {
  const auto found = view.find(key);
  return found ? found->boolean() : false;
}

std::vector<std::string> string_list(const JsonView& view) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < view.size(); ++i) out.push_back(view.at(i).string());
  return out;
}

RowFilter parse_filter(const std::optional<JsonView>& view) {
  RowFilter filter;
  if (!view) return filter;
  for (const auto& key : view->keys()) {
    const JsonView value = view->at(key);
    // The key names the field; errors point at the value, whose path carries the key.
    filter.equals.emplace_back(parse_field_ref(key, value), value.string());
  }
  return filter;
}

ColumnSpec parse_column(const JsonView& view) {
  view.allow_only({"header", "field", "scale", "format"});
  ColumnSpec column{view.at("header").string(), parse_field_ref(view.at("field")), 1.0, ""};
  if (const auto scale = view.find("scale")) column.scale = scale->number();
  if (const auto format = view.find("format")) {
    column.format = format->string();
    // Only formats that take one double, so a manifest cannot make snprintf misbehave.
    static const std::regex kPrintf(R"(^[^%]*%[-+ 0#]*[0-9]*(\.[0-9]+)?[fgeEG][^%]*(%%[^%]*)*$)");
    if (column.format != "int" && !std::regex_match(column.format, kPrintf)) {
      format->fail("expected \"int\" or a printf format with one %f/%g/%e conversion, got '" + column.format + "'");
    }
  }
  return column;
}

// An id that names files in the report folder (results/<id>.json, tables/<experiment>-<id>.md, ...): lower-case
// letters, digits, '-' and '_', so no id can reach outside the folder or hide a file.
std::string file_name_id(const JsonView& view) {
  static const std::regex kId("^[a-z0-9][a-z0-9_-]*$");
  std::string id = view.string();
  if (!std::regex_match(id, kId)) view.fail("expected a lower-case file-name-safe id ([a-z0-9][a-z0-9_-]*)");
  return id;
}

TableSpec parse_table(const JsonView& view) {
  view.allow_only({"id", "title", "where", "columns", "notes"});
  TableSpec table{file_name_id(view.at("id")), view.at("title").string(), parse_filter(view.find("where")), {}, {}};
  const JsonView columns = view.at("columns");
  if (columns.size() == 0) columns.fail("expected at least one column");
  for (std::size_t i = 0; i < columns.size(); ++i) table.columns.push_back(parse_column(columns.at(i)));
  if (const auto notes = view.find("notes")) table.notes = string_list(*notes);
  return table;
}

std::string parse_colour(const JsonView& view) {
  static const std::regex kColour("^#[0-9a-fA-F]{6}$");
  const std::string colour = view.string();
  if (!std::regex_match(colour, kColour)) view.fail("expected a colour \"#rrggbb\", got '" + colour + "'");
  return colour;
}

std::vector<StackSpec> parse_stack(const JsonView& view) {
  if (view.size() == 0) view.fail("expected at least one segment");
  std::vector<StackSpec> stack;
  for (std::size_t i = 0; i < view.size(); ++i) {
    const JsonView segment = view.at(i);
    segment.allow_only({"title", "field", "colour"});
    stack.push_back({segment.at("title").string(), parse_field_ref(segment.at("field")), ""});
    if (const auto colour = segment.find("colour")) stack.back().colour = parse_colour(*colour);
  }
  return stack;
}

SeriesSpec parse_series(const JsonView& view, PlotStyle style) {
  view.allow_only({"title", "from", "where", "x", "y", "stack", "colour", "dashed"});
  SeriesSpec series;
  series.title = view.at("title").string();
  series.from = optional_text(view, "from");
  series.where = parse_filter(view.find("where"));
  if (const auto x = view.find("x")) series.x = parse_field_ref(*x);
  if (const auto y = view.find("y")) series.y = parse_field_ref(*y);
  if (const auto stack = view.find("stack")) {
    if (style != PlotStyle::kStacked) stack->fail("only a stacked figure has a stack");
    if (series.y) stack->fail("a series has a stack or a y, not both");
    series.stack = parse_stack(*stack);
  }
  if (const auto colour = view.find("colour")) {
    if (!series.stack.empty()) colour->fail("a series with a stack has a colour per segment, not one");
    series.colour = parse_colour(*colour);
  }
  series.dashed = optional_flag(view, "dashed");
  if (series.dashed && (style == PlotStyle::kBars || style == PlotStyle::kStacked)) {
    view.at("dashed").fail("only lines and points can be dashed");
  }
  return series;
}

FigureSpec parse_figure(const JsonView& view) {
  view.allow_only({"id", "title", "where", "x_label", "y_label", "style", "log_x", "log_y", "x_scale", "y_scale", "x",
                   "y", "series_by", "curve", "stack", "series", "notes"});
  FigureSpec figure;
  figure.id = file_name_id(view.at("id"));
  figure.title = view.at("title").string();
  figure.where = parse_filter(view.find("where"));
  figure.x_label = view.at("x_label").string();
  figure.y_label = view.at("y_label").string();
  const JsonView style = view.at("style");
  figure.style = plot_style_from_string(style.one_of(plot_style_names()));
  figure.log_x = optional_flag(view, "log_x");
  figure.log_y = optional_flag(view, "log_y");
  if (const auto scale = view.find("x_scale")) figure.x_scale = scale->number();
  if (const auto scale = view.find("y_scale")) figure.y_scale = scale->number();
  figure.curve = optional_text(view, "curve");
  const bool stacked = figure.style == PlotStyle::kStacked;
  if (stacked && figure.log_y) view.at("log_y").fail("stacked bars start at 0: the y axis cannot be logarithmic");
  if (const auto stack = view.find("stack")) {
    if (!stacked) stack->fail("only a stacked figure has a stack");
    figure.stack = parse_stack(*stack);
  }
  if (const auto series = view.find("series")) {
    if (!figure.curve.empty()) series->fail("a curve figure takes one series per entry, not a series list");
    if (series->size() == 0) series->fail("expected at least one series");
    for (std::size_t i = 0; i < series->size(); ++i) figure.series.push_back(parse_series(series->at(i), figure.style));
  }
  if (const auto notes = view.find("notes")) figure.notes = string_list(*notes);
  if (const auto series = view.find("series_by")) figure.series_by = parse_field_ref(*series);
  if (!figure.curve.empty()) {
    if (figure.style == PlotStyle::kBars || stacked) view.at("curve").fail("a curve figure draws lines or points");
    return figure;
  }
  figure.x = parse_field_ref(view.at("x"));
  if (const auto y = view.find("y")) figure.y = parse_field_ref(*y);
  // Every series needs something to plot: its own y or stack, or the figure's.
  const bool figure_has_values = figure.y || !figure.stack.empty();
  const bool series_have_values =
      !figure.series.empty() && std::all_of(figure.series.begin(), figure.series.end(),
                                            [](const SeriesSpec& s) { return s.y || !s.stack.empty(); });
  if (!figure_has_values && !series_have_values) {
    view.fail(stacked ? "missing required field 'y' or 'stack' (on the figure or on every series)"
                      : "missing required field 'y' (on the figure or on every series)");
  }
  return figure;
}

Experiment parse_experiment(const JsonView& view) {
  view.allow_only({"id", "title", "description", "command", "first_look", "expected_s", "tables", "figures"});
  Experiment experiment;
  experiment.id = file_name_id(view.at("id"));
  // results/timings.json is the run's record of wall times (reports/report.hpp), not an experiment's results.
  if (experiment.id + ".json" == kTimingsFileName) view.at("id").fail("'" + experiment.id + "' is reserved");
  // Errors in these two name the experiment, which their JSON path alone does not.
  const auto got = [](const JsonView& value) {
    return value.raw().is_primitive() ? ", got " + value.raw().dump()
                                      : ", got a " + std::string(value.raw().type_name());
  };
  if (const auto expected = view.find("expected_s")) {
    if (!expected->raw().is_number() || !(expected->raw().get<double>() >= 0)) {
      expected->fail("experiment '" + experiment.id + "': expected_s must be a wall time in seconds >= 0" +
                     got(*expected));
    }
    experiment.expected_s = expected->raw().get<double>();
  }
  if (const auto flag = view.find("first_look")) {
    if (!flag->raw().is_boolean()) {
      flag->fail("experiment '" + experiment.id + "': first_look must be true or false" + got(*flag));
    }
    experiment.first_look = flag->raw().get<bool>();
  }
  experiment.title = view.at("title").string();
  experiment.description = view.at("description").string();
  experiment.command = string_list(view.at("command"));
  if (experiment.command.empty()) view.at("command").fail("expected a dsgd command");
  bool has_placeholder = false;
  for (const auto& arg : experiment.command) has_placeholder |= arg.find("{results}") != std::string::npos;
  if (!has_placeholder) view.at("command").fail("the command must write its results to \"{results}\"");
  std::set<std::string> ids;
  auto check_unique = [&](const JsonView& where, const std::string& id) {
    if (!ids.insert(id).second) where.fail("duplicate table/figure id '" + id + "'");
  };
  if (const auto tables = view.find("tables")) {
    for (std::size_t i = 0; i < tables->size(); ++i) {
      experiment.tables.push_back(parse_table(tables->at(i)));
      check_unique(tables->at(i), experiment.tables.back().id);
    }
  }
  if (const auto figures = view.find("figures")) {
    for (std::size_t i = 0; i < figures->size(); ++i) {
      experiment.figures.push_back(parse_figure(figures->at(i)));
      check_unique(figures->at(i), experiment.figures.back().id);
    }
  }
  return experiment;
}

}  // namespace

const std::vector<std::string>& plain_field_names() { return kPlainFields; }
const std::vector<std::string>& field_prefixes() { return kPrefixes; }

FieldRef parse_field_ref(const JsonView& view) { return parse_field_ref(view.string(), view); }

FieldRef parse_field_ref(const std::string& text, const JsonView& view) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    if (std::find(kPlainFields.begin(), kPlainFields.end(), text) == kPlainFields.end()) {
      std::vector<std::string> valid = kPlainFields;
      for (const auto& prefix : kPrefixes) valid.push_back(prefix + ":KEY");
      view.fail(unknown_name_message("field", text, valid));
    }
  } else {
    const std::string prefix = text.substr(0, colon);
    if (std::find(kPrefixes.begin(), kPrefixes.end(), prefix) == kPrefixes.end() || colon + 1 == text.size()) {
      view.fail("unknown field '" + text + "'; prefixed fields are " + join(kPrefixes) + " followed by ':KEY'");
    }
  }
  return FieldRef{text};
}

bool RowFilter::accepts(const Entry& entry) const {
  return std::all_of(equals.begin(), equals.end(),
                     [&](const auto& condition) { return condition.first.text_of(entry) == condition.second; });
}

std::optional<std::string> FieldRef::text_of(const Entry& entry) const {
  const auto colon = text.find(':');
  const std::string key = colon == std::string::npos ? "" : text.substr(colon + 1);
  const std::string prefix = colon == std::string::npos ? text : text.substr(0, colon);
  auto nonempty = [](const std::string& value) -> std::optional<std::string> {
    if (value.empty()) return std::nullopt;
    return value;
  };
  if (prefix == "label") {
    const auto it = entry.labels.find(key);
    if (it == entry.labels.end()) return std::nullopt;
    return it->second;
  }
  if (prefix == "option") {
    const auto it = entry.algorithm_options.find(key);
    if (it == entry.algorithm_options.end()) return std::nullopt;
    return it->is_string() ? it->get<std::string>() : it->dump();
  }
  if (prefix == "name") return entry.name;
  if (prefix == "executor") return nonempty(entry.executor);
  if (prefix == "fidelity") return nonempty(entry.fidelity);
  if (prefix == "platform") return nonempty(entry.platform);
  if (prefix == "algorithm") return nonempty(entry.algorithm);
  if (prefix == "model") return nonempty(entry.model);
  if (prefix == "dataset") return nonempty(entry.dataset);
  if (const auto value = number_of(entry)) return significant(*value);
  return std::nullopt;
}

std::optional<double> FieldRef::number_of(const Entry& entry) const {
  const auto colon = text.find(':');
  const std::string key = colon == std::string::npos ? "" : text.substr(colon + 1);
  const std::string prefix = colon == std::string::npos ? text : text.substr(0, colon);
  auto lookup = [&](const std::map<std::string, double>& map) -> std::optional<double> {
    const auto it = map.find(key);
    if (it == map.end()) return std::nullopt;
    return it->second;
  };
  if (prefix == "counter") return lookup(entry.counters);
  if (prefix == "breakdown") return lookup(entry.breakdown_s);
  if (prefix == "option") {
    const auto it = entry.algorithm_options.find(key);
    if (it == entry.algorithm_options.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  }
  if (prefix == "ranks" && entry.ranks != 0) return static_cast<double>(entry.ranks);
  if (prefix == "seed" && entry.seed != 0) return static_cast<double>(entry.seed);
  if (prefix == "real_time") return entry.real_time;
  if (prefix == "cpu_time") return entry.cpu_time;
  if (prefix == "iterations") return static_cast<double>(entry.iterations);
  return std::nullopt;
}

Manifest parse_manifest(const Json& json, const std::string& source) {
  const JsonView root(json, source);
  root.allow_only({"name", "title", "experiments"});
  Manifest manifest{root.at("name").string(), root.at("title").string(), {}};
  const JsonView experiments = root.at("experiments");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < experiments.size(); ++i) {
    manifest.experiments.push_back(parse_experiment(experiments.at(i)));
    if (!ids.insert(manifest.experiments.back().id).second) {
      experiments.at(i).at("id").fail("duplicate experiment id '" + manifest.experiments.back().id + "'");
    }
  }
  // A series may plot another experiment's results, which must be in this manifest (a typo would otherwise read
  // as "not run" and silently leave the series out).
  for (std::size_t i = 0; i < manifest.experiments.size(); ++i) {
    const auto& figures = manifest.experiments[i].figures;
    for (std::size_t f = 0; f < figures.size(); ++f) {
      for (std::size_t k = 0; k < figures[f].series.size(); ++k) {
        const std::string& from = figures[f].series[k].from;
        if (from.empty() || ids.count(from)) continue;
        std::vector<std::string> valid(ids.begin(), ids.end());
        experiments.at(i).at("figures").at(f).at("series").at(k).at("from").fail(
            unknown_name_message("experiment", from, valid));
      }
    }
  }
  return manifest;
}

std::vector<Experiment> first_look(const Manifest& manifest) {
  std::vector<Experiment> chosen;
  std::copy_if(manifest.experiments.begin(), manifest.experiments.end(), std::back_inserter(chosen),
               [](const Experiment& e) { return e.first_look; });
  return chosen.empty() ? manifest.experiments : chosen;
}

Manifest read_manifest(const std::filesystem::path& path) {
  return parse_manifest(read_json_file(path), path.string());
}

Manifest default_manifest() {
  for (const auto& file : embedded_manifests()) {
    if (file.name == "default") {
      const std::string source(file.source);
      return parse_manifest(parse_json(file.text, source), source);
    }
  }
  throw InternalError("the default manifest was not embedded (reports/CMakeLists.txt)");
}

std::string format_cell(const ColumnSpec& column, const Entry& entry) {
  if (column.format.empty()) return column.field.text_of(entry).value_or("—");
  const auto value = column.field.number_of(entry);
  if (!value) return "—";
  const double scaled = *value * column.scale;
  if (column.format == "int") return thousands(scaled);
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, column.format.c_str(), scaled);
  return buffer;
}

Table build_table(const TableSpec& spec, const Results& results) {
  Table table;
  table.title = spec.title;
  table.notes = spec.notes;
  for (const auto& column : spec.columns) {
    table.columns.push_back({column.header, column.format.empty() ? Align::kLeft : Align::kRight});
  }
  for (const auto& entry : results.benchmarks) {
    if (!spec.where.accepts(entry)) continue;
    std::vector<std::string> cells;
    for (const auto& column : spec.columns) cells.push_back(format_cell(column, entry));
    table.add_row(std::move(cells));
  }
  return table;
}

Figure build_figure(const FigureSpec& spec, const Results& own, const ResultsById& others) {
  Figure figure{spec.title, spec.x_label, spec.y_label, spec.style, spec.log_x, spec.log_y, {}, {}, {}, {}, {}};
  // The series to draw: those listed, or one of every entry the figure's `where` keeps.
  std::vector<SeriesSpec> listed = spec.series;
  if (listed.empty()) listed.push_back(SeriesSpec{"", "", {}, spec.x, spec.y, spec.stack, "", false});
  for (const auto& series : listed) {
    const bool has_values = series.y || spec.y || (spec.style == PlotStyle::kStacked && !spec.stack.empty()) ||
                            !series.stack.empty() || !spec.curve.empty();
    if (!has_values) throw InputError("figure '" + spec.id + "': series '" + series.title + "' has no y field");
  }
  struct Source {
    const SeriesSpec* series;
    std::vector<const Entry*> entries;
  };
  std::vector<Source> sources;
  for (const auto& series : listed) {
    const Results* results = &own;
    if (!series.from.empty()) {
      const auto found = others.find(series.from);
      if (found == others.end() || !found->second) {
        figure.notes.push_back("Not drawn: " + series.title + " (experiment '" + series.from + "' did not run).");
        continue;
      }
      results = found->second;
    }
    Source source{&series, {}};
    for (const auto& entry : results->benchmarks) {
      if (spec.where.accepts(entry) && series.where.accepts(entry)) source.entries.push_back(&entry);
    }
    sources.push_back(std::move(source));
  }
  // A series' title: its group (series_by) and its own title, or the entry's name when it has neither.
  auto title_of = [&](const SeriesSpec& series, const Entry& entry) {
    if (!spec.series_by) return series.title.empty() ? entry.name : series.title;
    const std::string group = spec.series_by->text_of(entry).value_or("—");
    return series.title.empty() ? group : group + ", " + series.title;
  };
  std::size_t dropped = 0;  // points a log axis cannot show
  auto drawable = [&](double x, double y) {
    const bool ok = (!spec.log_x || x > 0) && (!spec.log_y || y > 0);
    if (!ok) ++dropped;
    return ok;
  };
  auto note_dropped = [&] {
    if (dropped) {
      figure.notes.push_back("Not drawn: " + std::to_string(dropped) + (dropped == 1 ? " point" : " points") +
                             " with a value of 0 or less, which a logarithmic axis cannot show.");
    }
  };

  if (spec.style == PlotStyle::kBars) {
    for (const auto& source : sources) {
      const FieldRef& x = source.series->x.value_or(spec.x);
      const auto& y = source.series->y ? source.series->y : spec.y;
      for (const Entry* entry : source.entries) {
        const auto value = y->number_of(*entry);
        if (value && drawable(1, *value * spec.y_scale)) {
          figure.bars.emplace_back(x.text_of(*entry).value_or("—"), *value * spec.y_scale);
        }
      }
    }
    note_dropped();
    return figure;
  }

  if (spec.style == PlotStyle::kStacked) {
    // Segments by title, in order of first appearance; bars grouped by x, in order of first appearance, and within
    // a group in the order of the series list.
    std::map<std::string, std::size_t> segment_index;
    std::vector<std::string> group_order;
    std::map<std::string, std::vector<StackedBar>> groups;
    for (const auto& source : sources) {
      const SeriesSpec& series = *source.series;
      const FieldRef& x = series.x.value_or(spec.x);
      const auto& stack = !series.stack.empty() ? series.stack : series.y ? std::vector<StackSpec>{} : spec.stack;
      for (const Entry* entry : source.entries) {
        // A bar of the one implicit series needs no name beside its group's.
        const std::string title = series.title.empty() && !spec.series_by ? "" : title_of(series, *entry);
        // Without a stack the series is one segment, named by the series: the legend then says what the bar is.
        const std::vector<StackSpec> segments =
            stack.empty() ? std::vector<StackSpec>{{title.empty() ? spec.y_label : title,
                                                    *(series.y ? series.y : spec.y), series.colour}}
                          : stack;
        StackedBar bar{x.text_of(*entry).value_or("—"), stack.empty() ? "" : title, {}};
        bool any = false;
        for (const auto& segment : segments) {
          const auto [it, added] = segment_index.emplace(segment.title, figure.segments.size());
          if (added) figure.segments.push_back({segment.title, segment.colour});
          if (bar.values.size() <= it->second) bar.values.resize(it->second + 1, 0.0);
          if (const auto value = segment.field.number_of(*entry)) {
            bar.values[it->second] = *value * spec.y_scale;
            any = true;
          }
        }
        if (!any) continue;  // an entry with none of the fields (a fitted value beside the points)
        if (!groups.count(bar.group)) group_order.push_back(bar.group);
        groups[bar.group].push_back(std::move(bar));
      }
    }
    for (const auto& group : group_order) {
      for (auto& bar : groups[group]) {
        bar.values.resize(figure.segments.size(), 0.0);
        figure.stacked.push_back(std::move(bar));
      }
    }
    return figure;
  }

  if (!spec.curve.empty()) {
    for (const auto& source : sources) {
      for (const Entry* entry : source.entries) {
        for (const auto& curve : entry->curves) {
          if (curve.name != spec.curve) continue;
          Series series{title_of(*source.series, *entry), {}, "", 0};
          for (const auto& [x, y] : curve.points) {
            if (drawable(x * spec.x_scale, y * spec.y_scale)) {
              series.points.emplace_back(x * spec.x_scale, y * spec.y_scale);
            }
          }
          figure.series.push_back(std::move(series));
        }
      }
    }
    note_dropped();
    return figure;
  }

  // One point per entry, grouped into series: by series_by value (in order of first appearance), then by the
  // series list's order. With both, a group keeps one colour and each listed series its own dash.
  std::vector<std::string> group_order;
  std::map<std::pair<std::string, std::size_t>, Series> built;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    const SeriesSpec& listed_series = *sources[s].series;
    const FieldRef& x_field = listed_series.x.value_or(spec.x);
    const FieldRef& y_field = *(listed_series.y ? listed_series.y : spec.y);
    for (const Entry* entry : sources[s].entries) {
      const auto x = x_field.number_of(*entry);
      const auto y = y_field.number_of(*entry);
      if (!x || !y || !drawable(*x * spec.x_scale, *y * spec.y_scale)) continue;
      const std::string group = spec.series_by                ? spec.series_by->text_of(*entry).value_or("—")
                                : listed_series.title.empty() ? entry->name
                                                              : "";
      if (std::find(group_order.begin(), group_order.end(), group) == group_order.end()) group_order.push_back(group);
      auto& series = built[{group, s}];
      series.title = title_of(listed_series, *entry);
      series.points.emplace_back(*x * spec.x_scale, *y * spec.y_scale);
    }
  }
  const bool colour_by_group = spec.series_by && sources.size() > 1;
  for (std::size_t g = 0; g < group_order.size(); ++g) {
    for (std::size_t s = 0; s < sources.size(); ++s) {
      const auto found = built.find({group_order[g], s});
      if (found == built.end()) continue;
      Series series = std::move(found->second);
      if (colour_by_group) {
        series.colour = palette_colour(g);
        series.variant = s;
      }
      if (!sources[s].series->colour.empty()) series.colour = sources[s].series->colour;
      if (sources[s].series->dashed) series.variant = std::max<std::size_t>(series.variant, 1);
      figure.series.push_back(std::move(series));
    }
  }
  note_dropped();
  return figure;
}

}  // namespace dsgd::reports
