#include "reports/manifest.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

TableSpec parse_table(const JsonView& view) {
  view.allow_only({"id", "title", "where", "columns", "notes"});
  TableSpec table{view.at("id").string(), view.at("title").string(), parse_filter(view.find("where")), {}, {}};
  const JsonView columns = view.at("columns");
  if (columns.size() == 0) columns.fail("expected at least one column");
  for (std::size_t i = 0; i < columns.size(); ++i) table.columns.push_back(parse_column(columns.at(i)));
  if (const auto notes = view.find("notes")) table.notes = string_list(*notes);
  return table;
}

FigureSpec parse_figure(const JsonView& view) {
  view.allow_only(
      {"id", "title", "where", "x_label", "y_label", "style", "log_x", "log_y", "x", "y", "series_by", "curve"});
  FigureSpec figure;
  figure.id = view.at("id").string();
  figure.title = view.at("title").string();
  figure.where = parse_filter(view.find("where"));
  figure.x_label = view.at("x_label").string();
  figure.y_label = view.at("y_label").string();
  const JsonView style = view.at("style");
  figure.style = plot_style_from_string(style.one_of({"lines", "points", "linespoints", "bars"}));
  figure.log_x = optional_flag(view, "log_x");
  figure.log_y = optional_flag(view, "log_y");
  figure.curve = optional_text(view, "curve");
  if (figure.curve.empty()) {
    figure.x = parse_field_ref(view.at("x"));
    figure.y = parse_field_ref(view.at("y"));
  } else if (figure.style == PlotStyle::kBars) {
    view.at("curve").fail("a curve figure cannot use the bars style");
  }
  if (const auto series = view.find("series_by")) figure.series_by = parse_field_ref(*series);
  return figure;
}

Experiment parse_experiment(const JsonView& view) {
  view.allow_only({"id", "title", "description", "command", "tables", "figures"});
  Experiment experiment;
  experiment.id = view.at("id").string();
  static const std::regex kId("^[a-z0-9][a-z0-9_-]*$");
  if (!std::regex_match(experiment.id, kId)) view.at("id").fail("expected a lower-case file-name-safe id");
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

std::string series_title(const FigureSpec& spec, const Entry& entry) {
  if (!spec.series_by) return entry.name;
  return spec.series_by->text_of(entry).value_or("—");
}

}  // namespace

FieldRef parse_field_ref(const JsonView& view) { return parse_field_ref(view.string(), view); }

FieldRef parse_field_ref(const std::string& text, const JsonView& view) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    if (std::find(kPlainFields.begin(), kPlainFields.end(), text) == kPlainFields.end()) {
      std::vector<std::string> valid = kPlainFields;
      for (const auto& prefix : kPrefixes) valid.push_back(prefix + ":KEY");
      view.fail("unknown field '" + text + "'; valid values are: " + join(valid));
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
  return manifest;
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

Figure build_figure(const FigureSpec& spec, const Results& all) {
  Figure figure{spec.title, spec.x_label, spec.y_label, spec.style, spec.log_x, spec.log_y, {}, {}};
  Results results;
  for (const auto& entry : all.benchmarks) {
    if (spec.where.accepts(entry)) results.benchmarks.push_back(entry);
  }
  if (spec.style == PlotStyle::kBars) {
    for (const auto& entry : results.benchmarks) {
      const auto value = spec.y.number_of(entry);
      if (value) figure.bars.emplace_back(spec.x.text_of(entry).value_or("—"), *value);
    }
    return figure;
  }
  if (!spec.curve.empty()) {
    for (const auto& entry : results.benchmarks) {
      for (const auto& curve : entry.curves) {
        if (curve.name == spec.curve) figure.series.push_back({series_title(spec, entry), curve.points});
      }
    }
    return figure;
  }
  // One point per entry, grouped into series in order of first appearance.
  std::map<std::string, std::size_t> index;
  for (const auto& entry : results.benchmarks) {
    const auto x = spec.x.number_of(entry);
    const auto y = spec.y.number_of(entry);
    if (!x || !y) continue;
    const std::string title = series_title(spec, entry);
    const auto [it, added] = index.emplace(title, figure.series.size());
    if (added) figure.series.push_back({title, {}});
    figure.series[it->second].points.emplace_back(*x, *y);
  }
  return figure;
}

}  // namespace dsgd::reports
