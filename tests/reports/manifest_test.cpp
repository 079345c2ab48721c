#include "reports/manifest.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "core/error.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::reports {
namespace {

Json minimal_manifest() {
  return parse_json(R"json({
    "name": "t", "title": "T",
    "experiments": [{
      "id": "e1", "title": "E1", "description": "d",
      "command": ["models", "--results", "{results}"],
      "tables": [{"id": "t", "title": "tt", "columns": [
        {"header": "model", "field": "name"},
        {"header": "params (M)", "field": "counter:parameters", "scale": 1e-6, "format": "%.2f"},
        {"header": "n", "field": "counter:parameters", "format": "int"},
        {"header": "wait", "field": "breakdown:wait", "format": "%.1f"},
        {"header": "eta", "field": "option:eta"}]}],
      "figures": [{"id": "f", "title": "f", "x_label": "x", "y_label": "y", "style": "linespoints",
                   "x": "ranks", "y": "real_time", "series_by": "algorithm"}]
    }]})json",
                    "inline");
}

Entry entry(std::string name, std::string algorithm, std::int64_t ranks, double seconds) {
  Entry e;
  e.name = std::move(name);
  e.algorithm = std::move(algorithm);
  e.ranks = ranks;
  e.real_time = seconds;
  return e;
}

TEST(ReportsManifest, DefaultManifestParsesAndNamesModelsAndPlatforms) {
  const Manifest manifest = default_manifest();
  std::vector<std::string> ids;
  for (const auto& e : manifest.experiments) ids.push_back(e.id);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "models"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "platforms"), ids.end());
  // Seed 000's scaling results predicted in simulation, each with a table of predicted against published values.
  for (const char* id : {"table4-simulated", "table3-simulated", "fig12-simulated"}) {
    const auto found = std::find(ids.begin(), ids.end(), id);
    ASSERT_NE(found, ids.end()) << id;
    const auto& experiment = manifest.experiments[static_cast<std::size_t>(found - ids.begin())];
    ASSERT_FALSE(experiment.tables.empty()) << id;
    std::vector<std::string> fields;
    for (const auto& column : experiment.tables.front().columns) fields.push_back(column.field.text);
    for (const char* field : {"counter:predicted", "counter:published"}) {
      EXPECT_NE(std::find(fields.begin(), fields.end(), field), fields.end()) << id << " lacks " << field;
    }
  }
}

TEST(ReportsManifest, FormatsCellsByColumnSpec) {
  const Manifest manifest = parse_manifest(minimal_manifest(), "inline");
  const auto& columns = manifest.experiments[0].tables[0].columns;
  Entry e = entry("vgg16", "", 0, 0);
  e.counters["parameters"] = 138357544;
  e.algorithm_options = {{"eta", 0.05}};
  EXPECT_EQ(format_cell(columns[0], e), "vgg16");
  EXPECT_EQ(format_cell(columns[1], e), "138.36");
  EXPECT_EQ(format_cell(columns[2], e), "138,357,544");
  EXPECT_EQ(format_cell(columns[3], e), "—") << "absent breakdown shows a dash";
  EXPECT_EQ(format_cell(columns[4], e), "0.05");
}

TEST(ReportsManifest, BuildsSeriesGroupedByAField) {
  const Manifest manifest = parse_manifest(minimal_manifest(), "inline");
  Results results;
  results.benchmarks = {entry("a", "sync", 2, 1.0), entry("b", "async", 2, 1.5), entry("c", "sync", 4, 1.1)};
  const Figure figure = build_figure(manifest.experiments[0].figures[0], results);
  ASSERT_EQ(figure.series.size(), 2U);
  EXPECT_EQ(figure.series[0].title, "sync");
  EXPECT_EQ(figure.series[0].points, (std::vector<std::pair<double, double>>{{2, 1.0}, {4, 1.1}}));
  EXPECT_EQ(figure.series[1].title, "async");
}

TEST(ReportsManifest, CurveFiguresTakeOneSeriesPerEntry) {
  Json json = minimal_manifest();
  json["experiments"][0]["figures"][0] = {{"id", "c"},          {"title", "acc"},   {"x_label", "s"},
                                          {"y_label", "acc"},   {"style", "lines"}, {"curve", "test_accuracy"},
                                          {"series_by", "name"}};
  const Manifest manifest = parse_manifest(json, "inline");
  Results results;
  Entry e = entry("run1", "sync", 4, 1);
  e.curves = {Curve{"test_accuracy", "time_s", "accuracy", {{0, 0.1}, {1, 0.9}}}, Curve{"loss", "s", "l", {{0, 2}}}};
  results.benchmarks = {e};
  const Figure figure = build_figure(manifest.experiments[0].figures[0], results);
  ASSERT_EQ(figure.series.size(), 1U);
  EXPECT_EQ(figure.series[0].title, "run1");
  EXPECT_EQ(figure.series[0].points.size(), 2U);
}

// A figure of the named experiment in the default manifest (fails the test if absent).
const FigureSpec* default_figure(const Manifest& manifest, const std::string& experiment, const std::string& id) {
  for (const auto& e : manifest.experiments) {
    if (e.id != experiment) continue;
    for (const auto& figure : e.figures) {
      if (figure.id == id) return &figure;
    }
  }
  ADD_FAILURE() << experiment << " has no figure " << id;
  return nullptr;
}

TEST(ReportsManifest, DefaultManifestDrawsTheComparisonsItTabulates) {
  const Manifest manifest = default_manifest();
  // Seed 000 Table 4: predicted and published efficiency, one colour per model, against cores.
  if (const auto* figure = default_figure(manifest, "table4-simulated", "efficiency-by-cores")) {
    ASSERT_EQ(figure->series.size(), 2U);
    EXPECT_EQ(figure->series[0].y->text, "counter:predicted");
    EXPECT_EQ(figure->series[1].y->text, "counter:published");
    EXPECT_EQ(figure->series_by->text, "label:case");
    EXPECT_TRUE(figure->log_x);
  }
  // Seed 000 Table 3 / Fig 11: measured bars come from the measured experiment.
  if (const auto* figure = default_figure(manifest, "table3-simulated", "breakdown")) {
    EXPECT_EQ(figure->style, PlotStyle::kStacked);
    ASSERT_EQ(figure->series.size(), 3U);
    EXPECT_EQ(figure->series[0].from, "easgd-variants");
    EXPECT_EQ(figure->series[2].stack.at(0).field.text, "counter:published");
  }
  default_figure(manifest, "sallinen-fig3", "time-by-threads");
  default_figure(manifest, "sallinen-staleness", "lockstep");
  default_figure(manifest, "sallinen-mesh", "speedup-by-cores");
  if (const auto* figure = default_figure(manifest, "dogwild-lost-updates", "lost-by-threads")) {
    EXPECT_EQ(figure->series.back().from, "dogwild-lost-updates-hot");
  }
}

Entry point_entry(const std::string& model, double nodes, double predicted, double published) {
  Entry e = entry(model + "/" + std::to_string(nodes), "sync", 0, 1);
  e.labels["case"] = model;
  e.counters["nodes"] = nodes;
  e.counters["predicted"] = predicted;
  e.counters["published"] = published;
  return e;
}

TEST(ReportsManifest, ListedSeriesPlotSeveralFieldsPerGroupInOneColour) {
  Json json = minimal_manifest();
  json["experiments"][0]["figures"][0] = parse_json(R"json({
      "id": "eff", "title": "efficiency", "x_label": "cores", "y_label": "%", "style": "linespoints",
      "x": "counter:nodes", "x_scale": 68, "y_scale": 100, "series_by": "label:case",
      "series": [{"title": "predicted", "y": "counter:predicted"}, {"title": "published", "y": "counter:published"}]
    })json",
                                                    "inline");
  const Manifest manifest = parse_manifest(json, "inline");
  Results results;
  results.benchmarks = {point_entry("GoogLeNet", 1, 1.0, 1.0), point_entry("VGG", 1, 1.0, 1.0),
                        point_entry("GoogLeNet", 2, 0.97, 0.96), point_entry("VGG", 2, 0.96, 0.915)};
  const Figure figure = build_figure(manifest.experiments[0].figures[0], results);
  ASSERT_EQ(figure.series.size(), 4U);
  const std::vector<std::string> titles = {"GoogLeNet, predicted", "GoogLeNet, published", "VGG, predicted",
                                           "VGG, published"};
  for (std::size_t i = 0; i < titles.size(); ++i) EXPECT_EQ(figure.series[i].title, titles[i]);
  EXPECT_EQ(figure.series[3].points, (std::vector<std::pair<double, double>>{{68, 100}, {136, 91.5}}));
  // One colour per model, the published line dashed.
  EXPECT_EQ(figure.series[0].colour, figure.series[1].colour);
  EXPECT_NE(figure.series[0].colour, figure.series[2].colour);
  EXPECT_EQ(figure.series[0].variant, 0U);
  EXPECT_EQ(figure.series[1].variant, 1U);
}

Entry shares(const std::string& algorithm, double comm, double compute) {
  Entry e = entry("run/" + algorithm, algorithm, 4, 1);
  e.counters["share:comm"] = comm;
  e.counters["share:compute"] = compute;
  e.counters["published"] = comm * 2;
  e.labels["kind"] = "point";
  return e;
}

Json stacked_manifest() {
  return parse_json(R"json({
    "name": "t", "title": "T",
    "experiments": [
      {"id": "measured", "title": "M", "description": "", "command": ["models", "--results", "{results}"]},
      {"id": "predicted", "title": "P", "description": "", "command": ["models", "--results", "{results}"],
       "figures": [{"id": "f", "title": "breakdown", "x_label": "method", "y_label": "%", "style": "stacked",
                    "x": "algorithm", "y_scale": 100,
                    "stack": [{"title": "comm", "field": "counter:share:comm"},
                              {"title": "compute", "field": "counter:share:compute"}],
                    "series": [{"title": "measured", "from": "measured"},
                               {"title": "predicted", "where": {"label:kind": "point"}},
                               {"title": "published", "where": {"label:kind": "point"},
                                "stack": [{"title": "comm, published", "field": "counter:published",
                                           "colour": "#808080"}]}]}]}]})json",
                    "inline");
}

TEST(ReportsManifest, StackedFiguresCompareExperimentsBarByBar) {
  const Manifest manifest = parse_manifest(stacked_manifest(), "inline");
  const FigureSpec& spec = manifest.experiments[1].figures[0];
  Results measured;
  measured.benchmarks = {shares("sync", 0.25, 0.75), shares("async", 0.5, 0.5)};
  for (auto& e : measured.benchmarks) e.labels.clear();
  Results predicted;
  Entry fitted = entry("fitted", "", 0, 0);  // has none of the fields: no bar
  fitted.labels["kind"] = "fitted";
  predicted.benchmarks = {shares("async", 0.125, 0.875), fitted, shares("sync", 0.0625, 0.9375)};
  const Figure figure = build_figure(spec, predicted, {{"measured", &measured}});
  ASSERT_EQ(figure.segments.size(), 3U);
  EXPECT_EQ(figure.segments[2].title, "comm, published");
  EXPECT_EQ(figure.segments[2].colour, "#808080");
  // Groups in order of first appearance (the measured series comes first), bars in the order of the series list.
  ASSERT_EQ(figure.stacked.size(), 6U);
  const std::vector<std::pair<std::string, std::string>> order = {{"sync", "measured"},   {"sync", "predicted"},
                                                                  {"sync", "published"},  {"async", "measured"},
                                                                  {"async", "predicted"}, {"async", "published"}};
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(figure.stacked[i].group, order[i].first) << i;
    EXPECT_EQ(figure.stacked[i].label, order[i].second) << i;
  }
  EXPECT_EQ(figure.stacked[1].values, (std::vector<double>{6.25, 93.75, 0}));
  EXPECT_EQ(figure.stacked[2].values, (std::vector<double>{0, 0, 12.5}));
  EXPECT_TRUE(figure.notes.empty());

  // Without the measured experiment (`dsgd reproduce --only predicted`) its bars are left out, and the figure says so.
  const Figure partial = build_figure(spec, predicted, {});
  EXPECT_EQ(partial.stacked.size(), 4U);
  ASSERT_EQ(partial.notes.size(), 1U);
  EXPECT_EQ(partial.notes[0], "Not drawn: measured (experiment 'measured' did not run).");
}

TEST(ReportsManifest, SeriesOfOneFieldAreGroupedBars) {
  Json json = minimal_manifest();
  json["experiments"][0]["figures"][0] = parse_json(R"json({
      "id": "g", "title": "staleness", "x_label": "method", "y_label": "samples", "style": "stacked",
      "x": "algorithm",
      "series": [{"title": "bound", "y": "counter:bound", "colour": "#606060"}, {"title": "measured", "y": "real_time"}]
    })json",
                                                    "inline");
  const Manifest manifest = parse_manifest(json, "inline");
  Results results;
  results.benchmarks = {entry("a", "hogwild", 8, 3.5)};
  results.benchmarks[0].counters["bound"] = 7;
  const Figure figure = build_figure(manifest.experiments[0].figures[0], results);
  ASSERT_EQ(figure.segments.size(), 2U);
  EXPECT_EQ(figure.segments[0].title, "bound");
  EXPECT_EQ(figure.segments[0].colour, "#606060");
  ASSERT_EQ(figure.stacked.size(), 2U);
  EXPECT_EQ(figure.stacked[0].label, "") << "the legend names a bar of one segment";
  EXPECT_EQ(figure.stacked[1].values, (std::vector<double>{0, 3.5}));
}

TEST(ReportsManifest, PointsALogAxisCannotShowAreCountedNotFatal) {
  Json json = minimal_manifest();
  json["experiments"][0]["figures"][0]["log_y"] = true;
  const Manifest manifest = parse_manifest(json, "inline");
  Results results;
  results.benchmarks = {entry("a", "sync", 1, 0.0), entry("b", "sync", 2, 0.5), entry("c", "sync", 4, -1)};
  const Figure figure = build_figure(manifest.experiments[0].figures[0], results);
  ASSERT_EQ(figure.series.size(), 1U);
  EXPECT_EQ(figure.series[0].points, (std::vector<std::pair<double, double>>{{2, 0.5}}));
  ASSERT_EQ(figure.notes.size(), 1U);
  EXPECT_NE(figure.notes[0].find("2 points with a value of 0 or less"), std::string::npos) << figure.notes[0];
}

// Each malformed manifest is rejected with the JSON path of the culprit.
struct BadCase {
  const char* what;
  const char* pointer;
  Json value;
  const char* expected_in_message;
};

TEST(ReportsManifest, RejectsMalformedManifestsWithTheirPath) {
  const std::vector<BadCase> cases = {
      {"unknown field", "/experiments/0/tables/0/columns/0/field", "countr:x",
       "/experiments/0/tables/0/columns/0/field"},
      {"bad format", "/experiments/0/tables/0/columns/1/format", "%s", "printf format"},
      {"two conversions", "/experiments/0/tables/0/columns/1/format", "%f %f", "printf format"},
      {"bad style", "/experiments/0/figures/0/style", "pie", "valid values are: lines"},
      {"no placeholder", "/experiments/0/command", Json::array({"models"}), "{results}"},
      {"bad id", "/experiments/0/id", "Bad Id", "file-name-safe"},
      // The probe of issue 42: a table id that made `dsgd report` write target/pwned.md/.csv/.tex outside --out.
      {"table id escaping the folder", "/experiments/0/tables/0/id", "x/../../../../target/pwned", "file-name-safe"},
      {"figure id escaping the folder", "/experiments/0/figures/0/id", "../up", "file-name-safe"},
      {"hidden figure id", "/experiments/0/figures/0/id", ".hidden", "file-name-safe"},
      {"unknown plain field", "/experiments/0/figures/0/x", "cores", "valid values are: name"},
  };
  for (const auto& bad : cases) {
    Json json = minimal_manifest();
    json[Json::json_pointer(bad.pointer)] = bad.value;
    try {
      parse_manifest(json, "m.json");
      ADD_FAILURE() << bad.what << ": accepted";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("m.json: "), std::string::npos) << bad.what << ": " << message;
      EXPECT_NE(message.find(bad.expected_in_message), std::string::npos) << bad.what << ": " << message;
    }
  }
}

TEST(ReportsManifest, RejectsFigureSeriesItCannotDraw) {
  const std::vector<BadCase> cases = {
      {"unknown experiment", "/experiments/1/figures/0/series/0/from", "measurd",
       "/experiments/1/figures/0/series/0/from: unknown experiment 'measurd'; did you mean 'measured'? valid values "
       "are: measured, predicted"},
      {"log y under stacked bars", "/experiments/1/figures/0/log_y", true, "cannot be logarithmic"},
      {"stack on lines", "/experiments/1/figures/0/style", "lines", "only a stacked figure has a stack"},
      {"bad colour", "/experiments/1/figures/0/series/2/stack/0/colour", "grey", "expected a colour \"#rrggbb\""},
      {"empty stack", "/experiments/1/figures/0/stack", Json::array(), "expected at least one segment"},
      {"dashed bars", "/experiments/1/figures/0/series/0/dashed", true, "only lines and points can be dashed"},
      {"series with a curve", "/experiments/1/figures/0/curve", "loss", "not a series list"},
  };
  for (const auto& bad : cases) {
    Json json = stacked_manifest();
    json[Json::json_pointer(bad.pointer)] = bad.value;
    const std::string message = testing::input_error([&] { parse_manifest(json, "m.json"); });
    EXPECT_NE(message.find(bad.expected_in_message), std::string::npos) << bad.what << ": " << message;
  }
  // Nothing to plot: no y on the figure or on a series.
  Json json = minimal_manifest();
  json["experiments"][0]["figures"][0].erase("y");
  EXPECT_NE(testing::input_error([&] { parse_manifest(json, "m.json"); }).find("missing required field 'y'"),
            std::string::npos);
  json["experiments"][0]["figures"][0]["series"] = {{{"title", "one"}, {"y", "real_time"}}, {{"title", "two"}}};
  EXPECT_NE(testing::input_error([&] { parse_manifest(json, "m.json"); }).find("missing required field 'y'"),
            std::string::npos);
  json["experiments"][0]["figures"][0]["series"][1]["y"] = "cpu_time";
  EXPECT_NO_THROW(parse_manifest(json, "m.json"));
}

// A required field left out, or a field the schema does not know, is rejected with one line naming the file, the
// JSON path and the field.
TEST(ReportsManifest, RejectsMissingRequiredAndUnknownFields) {
  struct Case {
    const char* what;
    const char* pointer;  // the object to change
    const char* key;
    const char* expected_in_message;
  };
  const std::vector<Case> missing = {
      {"experiment without a command", "/experiments/0", "command", "/experiments/0: missing required field 'command'"},
      {"column without a field", "/experiments/0/tables/0/columns/0", "field",
       "/experiments/0/tables/0/columns/0: missing required field 'field'"},
      {"table without columns", "/experiments/0/tables/0", "columns", "missing required field 'columns'"},
      {"manifest without experiments", "", "experiments", "missing required field 'experiments'"},
  };
  for (const auto& bad : missing) {
    Json json = minimal_manifest();
    json[Json::json_pointer(bad.pointer)].erase(bad.key);
    const std::string message = testing::input_error([&] { parse_manifest(json, "m.json"); });
    EXPECT_EQ(message.rfind("m.json: ", 0), 0U) << bad.what << ": " << message;
    EXPECT_NE(message.find(bad.expected_in_message), std::string::npos) << bad.what << ": " << message;
  }
  const std::vector<Case> unknown = {
      {"unknown experiment key", "/experiments/0", "colour",
       "/experiments/0: unknown field 'colour'; valid fields are"},
      {"unknown column key", "/experiments/0/tables/0/columns/0", "width", "unknown field 'width'"},
      {"unknown table key", "/experiments/0/tables/0", "caption", "unknown field 'caption'"},
      {"unknown top-level key", "", "version", "unknown field 'version'"},
  };
  for (const auto& bad : unknown) {
    Json json = minimal_manifest();
    json[Json::json_pointer(bad.pointer)][bad.key] = 1;
    const std::string message = testing::input_error([&] { parse_manifest(json, "m.json"); });
    EXPECT_EQ(message.rfind("m.json: ", 0), 0U) << bad.what << ": " << message;
    EXPECT_NE(message.find(bad.expected_in_message), std::string::npos) << bad.what << ": " << message;
  }
  // A command that is not a list of strings.
  Json json = minimal_manifest();
  json["experiments"][0]["command"] = "models --results {results}";
  EXPECT_NE(
      testing::input_error([&] { parse_manifest(json, "m.json"); }).find("/experiments/0/command: expected an array"),
      std::string::npos);
}

class ReportsManifestFile : public testing::ScratchDirTest {};

TEST_F(ReportsManifestFile, BadJsonNamesTheFileLineAndColumn) {
  const auto path = dir_ / "broken.json";
  std::ofstream(path) << "{\n  \"name\": \"t\",\n  \"title\": \"T\"\n  \"experiments\": []\n}\n";  // no comma
  const std::string message = testing::input_error([&] { read_manifest(path); });
  EXPECT_NE(message.find(path.string() + ":4:"), std::string::npos) << message;
  EXPECT_NE(message.find("JSON syntax error"), std::string::npos) << message;
  EXPECT_NE(testing::input_error([&] { read_manifest(dir_ / "absent.json"); }).find("absent.json: no such file"),
            std::string::npos);
}

TEST(ReportsManifest, WhereSelectsRowsByFieldText) {
  Json json = minimal_manifest();
  json["experiments"][0]["tables"][0]["where"] = {{"algorithm", "sync"}};
  const Manifest manifest = parse_manifest(json, "inline");
  Results results;
  results.benchmarks = {entry("a", "sync", 2, 1.0), entry("b", "async", 2, 1.5), entry("c", "sync", 4, 1.1)};
  const Table table = build_table(manifest.experiments[0].tables[0], results);
  ASSERT_EQ(table.rows.size(), 2U);
  EXPECT_EQ(table.rows[0][0], "a");
  EXPECT_EQ(table.rows[1][0], "c");

  json["experiments"][0]["tables"][0]["where"] = {{"algoritm", "sync"}};
  try {
    parse_manifest(json, "m.json");
    FAIL() << "an unknown field in where was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/experiments/0/tables/0/where/algoritm"), std::string::npos) << e.what();
  }
}

TEST(ReportsManifest, ReadsExpectedTimeAndFirstLook) {
  Json json = minimal_manifest();
  const Manifest plain = parse_manifest(json, "inline");
  EXPECT_FALSE(plain.experiments[0].expected_s.has_value()) << "absent: not measured";
  EXPECT_FALSE(plain.experiments[0].first_look);
  json["experiments"][0]["expected_s"] = 12.5;
  json["experiments"][0]["first_look"] = true;
  const Manifest marked = parse_manifest(json, "inline");
  EXPECT_EQ(marked.experiments[0].expected_s, 12.5);
  EXPECT_TRUE(marked.experiments[0].first_look);
  json["experiments"][0]["expected_s"] = 0;
  EXPECT_EQ(parse_manifest(json, "inline").experiments[0].expected_s, 0.0);
}

// A bad expected time or first-look mark names the file, the path and the experiment.
TEST(ReportsManifest, RejectsANegativeOrNonNumericExpectedTime) {
  const std::vector<BadCase> cases = {
      {"negative", "/experiments/0/expected_s", -1, "/experiments/0/expected_s: experiment 'e1': expected_s must be"},
      {"text", "/experiments/0/expected_s", "35 s", "experiment 'e1': expected_s must be a wall time in seconds >= 0"},
      {"list", "/experiments/0/expected_s", Json::array({35}), "experiment 'e1'"},
      {"flag as text", "/experiments/0/first_look", "yes", "experiment 'e1': first_look must be true or false"},
      {"reserved id", "/experiments/0/id", "timings", "'timings' is reserved"},
  };
  for (const auto& bad : cases) {
    Json json = minimal_manifest();
    json[Json::json_pointer(bad.pointer)] = bad.value;
    const std::string message = testing::input_error([&] { parse_manifest(json, "m.json"); });
    EXPECT_EQ(message.rfind("m.json: ", 0), 0U) << bad.what << ": " << message;
    EXPECT_NE(message.find(bad.expected_in_message), std::string::npos) << bad.what << ": " << message;
  }
}

TEST(ReportsManifest, TheFirstLookIsTheMarkedExperimentsOrAllWhereNoneIs) {
  Json json = minimal_manifest();
  for (const char* id : {"e2", "e3"}) {
    json["experiments"].push_back(json["experiments"][0]);
    json["experiments"].back()["id"] = id;
  }
  const auto ids = [](const std::vector<Experiment>& experiments) {
    std::vector<std::string> out;
    for (const auto& e : experiments) out.push_back(e.id);
    return out;
  };
  EXPECT_EQ(ids(first_look(parse_manifest(json, "inline"))), (std::vector<std::string>{"e1", "e2", "e3"}));
  json["experiments"][2]["first_look"] = true;
  json["experiments"][0]["first_look"] = true;
  json["experiments"][1]["first_look"] = false;
  EXPECT_EQ(ids(first_look(parse_manifest(json, "inline"))), (std::vector<std::string>{"e1", "e3"}));
}

// The default first look is what `dsgd reproduce` runs for a newcomer: every experiment of it has a measured time,
// and by those times it fits the 15 minutes it promises on 2 cores (docs/manifest-schema.md).
TEST(ReportsManifest, TheDefaultFirstLookIsMeasuredAndFitsFifteenMinutes) {
  const Manifest manifest = default_manifest();
  const auto chosen = first_look(manifest);
  ASSERT_LT(chosen.size(), manifest.experiments.size()) << "the default manifest marks a first look";
  double total_s = 0;
  for (const auto& e : chosen) {
    ASSERT_TRUE(e.expected_s.has_value()) << e.id << " is in the first look without an expected time";
    total_s += *e.expected_s;
  }
  EXPECT_LE(total_s, 15 * 60) << "expectation: at most 900 s; actual " << total_s << " s";
  for (const char* id : {"roofline", "train-lenet", "methods", "table4-simulated"}) {
    EXPECT_TRUE(std::any_of(chosen.begin(), chosen.end(), [&](const Experiment& e) { return e.id == id; })) << id;
  }
}

TEST(ReportsManifest, RejectsDuplicateExperimentIds) {
  Json json = minimal_manifest();
  json["experiments"].push_back(json["experiments"][0]);
  EXPECT_THROW(parse_manifest(json, "m.json"), InputError);
}

}  // namespace
}  // namespace dsgd::reports
