#include "reports/plot.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "reports/manifest.hpp"

namespace dsgd::reports {

namespace {

constexpr const char* kFileLabel = "file";
constexpr const char* kSeriesLabel = "dsgd plot series";

// The fields that may tell series apart, in the order their values appear in a legend. Curves are one per run, and
// runs of one configuration may also differ in their size and seed.
const std::vector<std::string> kSeriesCandidates = {"algorithm", "platform", "model", "dataset", "executor",
                                                    "fidelity",  "ranks",    "seed",  "file"};
// Fields that may change along a sweep's x without making another series.
const std::vector<std::string> kAlongX = {"fidelity", "ranks", "seed"};

// Every name a bare field may take in these entries, for "did you mean".
std::vector<std::string> known_fields(const std::vector<Entry>& entries) {
  std::set<std::string> names(plain_field_names().begin(), plain_field_names().end());
  names.insert(kFileLabel);
  for (const auto& entry : entries) {
    for (const auto& [key, value] : entry.counters) names.insert(key);
    for (const auto& [key, value] : entry.labels) names.insert(key);
    for (const auto& [key, value] : entry.breakdown_s) names.insert(key);
    for (const auto& [key, value] : entry.algorithm_options.items()) names.insert(key);
    for (const auto& curve : entry.curves) names.insert(curve.name);
  }
  names.erase(kSeriesLabel);
  return {names.begin(), names.end()};
}

FieldRef resolve_field(const std::string& option, const std::string& written, const std::vector<Entry>& entries) {
  const std::string text = written == "algo" ? "algorithm" : written;
  if (text.empty()) throw InputError(option + ": expected a field name");
  const auto& plain = plain_field_names();
  if (std::find(plain.begin(), plain.end(), text) != plain.end()) return FieldRef{text};
  if (text == kFileLabel) return FieldRef{std::string("label:") + kFileLabel};
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    const auto& prefixes = field_prefixes();
    if (std::find(prefixes.begin(), prefixes.end(), text.substr(0, colon)) == prefixes.end() ||
        colon + 1 == text.size()) {
      throw InputError(option + ": unknown field '" + written + "'; prefixed fields are " + join(prefixes) +
                       " followed by ':KEY'");
    }
    return FieldRef{text};
  }
  const auto has = [&](auto&& found) { return std::any_of(entries.begin(), entries.end(), found); };
  if (has([&](const Entry& e) { return e.counters.count(text) > 0; })) return FieldRef{"counter:" + text};
  if (has([&](const Entry& e) { return e.labels.count(text) > 0; })) return FieldRef{"label:" + text};
  if (has([&](const Entry& e) { return e.breakdown_s.count(text) > 0; })) return FieldRef{"breakdown:" + text};
  if (has([&](const Entry& e) { return e.algorithm_options.contains(text); })) return FieldRef{"option:" + text};
  throw InputError(option + ": " + unknown_name_message("field", written, known_fields(entries)));
}

// Whether `curve` is the one `y` names (by name or y label), with `x`, if given, naming its x label.
bool curve_matches(const Curve& curve, const std::string& y, const std::string& x) {
  if (curve.name != y && curve.y_label != y) return false;
  const std::string x_label = x == "time" ? "time_s" : x == "iterations" ? "iteration" : x;
  return x.empty() || curve.x_label == x_label;
}

// An axis label from a field's name: "counter:round_trip_s" reads "round trip (s)".
std::string readable(const std::string& field) {
  std::string name = field.substr(field.find(':') == std::string::npos ? 0 : field.find(':') + 1);
  if (name == "real_time") return "time (s)";
  std::string unit;
  for (const auto& [suffix, written] : std::vector<std::pair<std::string, std::string>>{
           {"_s", " (s)"}, {"_Bps", " (B/s)"}, {"_bytes", " (bytes)"}, {"_flops", " (FLOP/s)"}}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.resize(name.size() - suffix.size());
      unit = written;
      break;
    }
  }
  std::replace(name.begin(), name.end(), '_', ' ');
  return name + unit;
}

// The legend of an entry: the values of the series fields, ranks and seeds said as such.
std::string legend(const std::vector<FieldRef>& fields, const Entry& entry) {
  std::vector<std::string> parts;
  for (const auto& field : fields) {
    const std::string value = field.text_of(entry).value_or("—");
    parts.push_back(field.text == "ranks" ? value + " ranks" : field.text == "seed" ? "seed " + value : value);
  }
  return join(parts);
}

// The series fields among `candidates`, in order. A field is taken where it tells apart entries the fields taken
// before it do not: the file beside the algorithm of the same name adds nothing. Points are also one series across
// the values of a field that only follows x (a sweep simulated message by message up to 272 ranks and flow by flow
// above): `along_x` fields are taken only where two entries at one x differ in them.
std::vector<FieldRef> series_fields(const std::vector<std::string>& candidates, const std::vector<std::string>& along_x,
                                    const std::vector<Entry>& entries, const std::optional<FieldRef>& x) {
  std::vector<FieldRef> fields;
  const auto key = [&](const Entry& entry, bool with_x) {
    std::vector<std::string> values;
    for (const auto& field : fields) values.push_back(field.text_of(entry).value_or("—"));
    if (with_x && x) values.push_back(x->text_of(entry).value_or("—"));
    return values;
  };
  for (const auto& name : candidates) {
    const FieldRef field = resolve_field("--series", name, entries);
    if (x && field.text == x->text) continue;
    const bool only_at_one_x = x && std::find(along_x.begin(), along_x.end(), name) != along_x.end();
    // Values of the field per key of the fields taken (and x): a key with two values needs the field.
    std::map<std::vector<std::string>, std::set<std::string>> values;
    for (const auto& entry : entries) {
      values[key(entry, only_at_one_x)].insert(field.text_of(entry).value_or("—"));
    }
    bool splits = false;
    for (const auto& [k, seen] : values) splits |= seen.size() > 1;
    if (splits) fields.push_back(field);
  }
  return fields;
}

}  // namespace

Figure plot_figure(const std::vector<NamedResults>& files, const PlotRequest& request) {
  if (request.y.empty()) throw InputError("--y: expected a field or a curve to plot");
  std::vector<Entry> all;
  for (const auto& file : files) {
    for (Entry entry : file.results.benchmarks) {
      entry.labels[kFileLabel] = file.name;
      all.push_back(std::move(entry));
    }
  }
  RowFilter where;
  for (const auto& condition : request.where) {
    const auto equals = condition.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw InputError("--where: expected FIELD=VALUE, got '" + condition + "'");
    }
    where.equals.emplace_back(resolve_field("--where", condition.substr(0, equals), all), condition.substr(equals + 1));
  }
  Results kept;
  std::copy_if(all.begin(), all.end(), std::back_inserter(kept.benchmarks),
               [&](const Entry& entry) { return where.accepts(entry); });
  if (kept.benchmarks.empty()) {
    throw InputError(request.where.empty() ? "the results files have no entries"
                                           : "--where: no entry has " + join(request.where, " and "));
  }
  auto& entries = kept.benchmarks;

  FigureSpec spec;
  const Curve* curve = nullptr;
  for (const auto& entry : entries) {
    for (const auto& candidate : entry.curves) {
      if (!curve && curve_matches(candidate, request.y, request.x)) curve = &candidate;
    }
  }
  if (curve) {
    spec.curve = curve->name;
  } else if (!request.x.empty()) {
    // A curve of that y against another x: say which x it has, rather than look for a field named like the curve.
    std::set<std::string> x_labels;
    for (const auto& entry : entries) {
      for (const auto& candidate : entry.curves) {
        if (curve_matches(candidate, request.y, "")) x_labels.insert(candidate.x_label);
      }
    }
    if (!x_labels.empty()) {
      throw InputError("--x: the " + request.y + " curves are against " +
                       join(std::vector<std::string>(x_labels.begin(), x_labels.end()), " or ") + ", not " + request.x);
    }
  }
  if (!curve) {
    if (request.x.empty()) {
      throw InputError("--x: expected the field to plot " + request.y +
                       " against (only a curve, e.g. test_accuracy, has its own x)");
    }
    spec.x = resolve_field("--x", request.x, entries);
    spec.y = resolve_field("--y", request.y, entries);
  }
  std::vector<FieldRef> fields;
  for (const auto& name : request.series) fields.push_back(resolve_field("--series", name, entries));
  if (request.series.empty()) {
    fields = series_fields(kSeriesCandidates, kAlongX, entries, curve ? std::nullopt : std::optional(spec.x));
  }
  // Without a field that differs, the one series (or each run's curve) is named by what the entries are.
  const bool named_by_fields = !fields.empty();
  if (!named_by_fields) fields = {FieldRef{"algorithm"}};
  for (auto& entry : entries) {
    entry.labels[kSeriesLabel] = legend(fields, entry);
    if (entry.labels[kSeriesLabel] == "—" || (curve && !named_by_fields && entries.size() > 1)) {
      entry.labels[kSeriesLabel] = entry.name;
    }
  }
  spec.series_by = FieldRef{std::string("label:") + kSeriesLabel};
  spec.style = request.style;
  spec.log_x = request.log_x;
  spec.log_y = request.log_y;
  const std::string x_name = curve ? curve->x_label : spec.x.text;
  const std::string y_name = curve ? curve->y_label : spec.y->text;
  spec.x_label = request.x_label.empty() ? readable(x_name) : request.x_label;
  spec.y_label = request.y_label.empty() ? readable(y_name) : request.y_label;
  const auto bare = [](const std::string& label) { return label.substr(0, label.find(" (")); };
  spec.title = request.title.empty() ? bare(readable(y_name)) + " against " + bare(readable(x_name)) : request.title;

  Figure figure = build_figure(spec, kept);
  if (!curve) {
    // A line joins one series' points from left to right, whichever file and order they came in.
    for (auto& series : figure.series) std::stable_sort(series.points.begin(), series.points.end());
  }
  if (!has_data(figure)) {
    throw InputError(curve ? "no entry has points on its " + curve->name + " curve"
                           : "no entry has both " + spec.x.text + " and " + spec.y->text + " as numbers");
  }
  return figure;
}

}  // namespace dsgd::reports
