#include "reports/results.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <set>

#include "core/atomic_file.hpp"
#include "core/breakdown.hpp"
#include "core/error.hpp"
#include "dsgd/config.hpp"

namespace dsgd::reports {

namespace {

// Fields of an entry that are not user counters; any other number in an entry is a counter (Google Benchmark's
// convention), and any other non-number is rejected so typos do not vanish.
const std::set<std::string, std::less<>> kEntryFields = {
    "name",           "run_name",       "run_type",       "repetitions",  "repetition_index",
    "threads",        "iterations",     "real_time",      "cpu_time",     "time_unit",
    "executor",       "fidelity",       "platform",       "algorithm",    "algorithm_options",
    "model",          "dataset",        "ranks",          "seed",         "breakdown_s",
    "labels",         "curves",         "label",          "family_index", "per_family_instance_index",
    "aggregate_name", "aggregate_unit", "error_occurred", "error_message"};

const std::vector<std::string> kTimeUnits = {"ns", "us", "ms", "s"};

std::string iso8601_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  ::localtime_r(&now, &local);
  std::array<char, 64> buffer{};
  std::strftime(buffer.data(), buffer.size(), "%Y-%m-%dT%H:%M:%S%z", &local);
  return buffer.data();
}

void put_if(Json& out, const char* key, const std::string& value) {
  if (!value.empty()) out[key] = value;
}

Json curve_to_json(const Curve& curve) {
  Json points = Json::array();
  for (const auto& [x, y] : curve.points) points.push_back({x, y});
  return {{"name", curve.name}, {"x", curve.x_label}, {"y", curve.y_label}, {"points", points}};
}

Curve curve_from_json(const JsonView& view) {
  view.allow_only({"name", "x", "y", "points"});
  Curve curve{view.at("name").string(), view.at("x").string(), view.at("y").string(), {}};
  const JsonView points = view.at("points");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const JsonView point = points.at(i);
    if (point.size() != 2) point.fail("expected an [x, y] pair");
    curve.points.emplace_back(point.at(std::size_t{0}).number(), point.at(std::size_t{1}).number());
  }
  return curve;
}

Json entry_to_json(const Entry& entry) {
  Json out = Json::object();
  out["name"] = entry.name;
  out["run_name"] = entry.name;
  out["run_type"] = entry.run_type;
  out["repetitions"] = 1;
  out["repetition_index"] = 0;
  out["threads"] = 1;
  out["iterations"] = entry.iterations;
  out["real_time"] = entry.real_time;
  out["cpu_time"] = entry.cpu_time;
  out["time_unit"] = entry.time_unit;
  for (const auto& [key, value] : entry.counters) {
    DSGD_ENFORCE(!kEntryFields.contains(key), "counter '" + key + "' collides with a schema field");
    out[key] = value;
  }
  put_if(out, "executor", entry.executor);
  put_if(out, "fidelity", entry.fidelity);
  put_if(out, "platform", entry.platform);
  put_if(out, "algorithm", entry.algorithm);
  if (!entry.algorithm_options.empty()) out["algorithm_options"] = entry.algorithm_options;
  put_if(out, "model", entry.model);
  put_if(out, "dataset", entry.dataset);
  if (entry.ranks != 0) out["ranks"] = entry.ranks;
  if (entry.seed != 0) out["seed"] = entry.seed;
  if (!entry.breakdown_s.empty()) {
    for (const auto& [category, seconds] : entry.breakdown_s) {
      if (!category_from_string(category)) {
        std::vector<std::string> valid(kCategoryNames.begin(), kCategoryNames.end());
        throw UnknownNameError("breakdown category", category, valid);
      }
    }
    out["breakdown_s"] = entry.breakdown_s;
  }
  if (!entry.labels.empty()) out["labels"] = entry.labels;
  if (!entry.curves.empty()) {
    Json curves = Json::array();
    for (const auto& curve : entry.curves) curves.push_back(curve_to_json(curve));
    out["curves"] = curves;
  }
  return out;
}

std::string optional_string(const JsonView& view, const char* key) {
  const auto found = view.find(key);
  return found ? found->string() : std::string();
}

Entry entry_from_json(const JsonView& view) {
  Entry entry;
  entry.name = view.at("name").string();
  entry.run_type = view.at("run_type").one_of({"iteration", "aggregate"});
  entry.iterations = view.at("iterations").integer();
  entry.real_time = view.at("real_time").nonnegative();  // times are never negative (issue 42)
  entry.cpu_time = view.at("cpu_time").nonnegative();
  entry.time_unit = view.at("time_unit").one_of(kTimeUnits);
  entry.executor = optional_string(view, "executor");
  entry.fidelity = optional_string(view, "fidelity");
  entry.platform = optional_string(view, "platform");
  entry.algorithm = optional_string(view, "algorithm");
  if (const auto options = view.find("algorithm_options")) {
    options->keys();  // type check: must be an object
    entry.algorithm_options = options->raw();
  }
  entry.model = optional_string(view, "model");
  entry.dataset = optional_string(view, "dataset");
  if (const auto ranks = view.find("ranks")) entry.ranks = ranks->positive_integer();
  if (const auto seed = view.find("seed")) {
    if (!seed->raw().is_number_unsigned()) seed->fail("expected a non-negative integer seed");
    entry.seed = seed->raw().get<std::uint64_t>();
  }
  if (const auto breakdown = view.find("breakdown_s")) {
    for (const auto& category : breakdown->keys()) {
      if (!category_from_string(category)) {
        std::vector<std::string> valid(kCategoryNames.begin(), kCategoryNames.end());
        breakdown->fail(unknown_name_message("breakdown category", category, valid));
      }
      entry.breakdown_s[category] = breakdown->at(category).nonnegative();
    }
  }
  if (const auto labels = view.find("labels")) {
    for (const auto& key : labels->keys()) entry.labels[key] = labels->at(key).string();
  }
  if (const auto curves = view.find("curves")) {
    for (std::size_t i = 0; i < curves->size(); ++i) entry.curves.push_back(curve_from_json(curves->at(i)));
  }
  for (const auto& key : view.keys()) {
    if (kEntryFields.contains(key)) continue;
    const JsonView value = view.at(key);
    if (!value.raw().is_number()) value.fail("unknown field (a user counter must be a number)");
    entry.counters[key] = value.number();
  }
  return entry;
}

}  // namespace

void set_breakdown(Entry& entry, const Breakdown& breakdown) {
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    if (breakdown.seconds[i] > 0) entry.breakdown_s[std::string(kCategoryNames[i])] = breakdown.seconds[i];
  }
}

Entry catalog_entry(std::string name, const std::string& kind, const std::string& description) {
  Entry entry;
  entry.name = std::move(name);
  entry.executor = "catalog";
  entry.fidelity = "static";
  entry.labels["kind"] = kind;
  entry.labels["description"] = description;
  return entry;
}

Entry timed_entry(std::string name, std::string executor, std::string fidelity, std::string algorithm,
                  std::int64_t ranks, double seconds) {
  Entry entry;
  entry.name = std::move(name);
  entry.executor = std::move(executor);
  entry.fidelity = std::move(fidelity);
  entry.algorithm = std::move(algorithm);
  entry.ranks = ranks;
  entry.real_time = seconds;
  entry.cpu_time = seconds;
  return entry;
}

Provenance current_provenance(const std::string& command) {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return {DSGD_VERSION, DSGD_GIT_COMMIT, host.data(), iso8601_now(), command};
}

Json to_json(const Results& results) {
  Json context = {
      {"date", results.provenance.date},
      {"host_name", results.provenance.host_name},
      {"executable", results.executable},
      {"num_cpus", results.num_cpus},
      {"library_build_type", "release"},
      {"dsgd",
       {{"schema_version", kSchemaVersion},
        {"version", results.provenance.dsgd_version},
        {"git_commit", results.provenance.git_commit},
        {"command", results.provenance.command}}},
  };
  if (results.interrupted) context["interrupted"] = true;
  Json benchmarks = Json::array();
  for (const auto& entry : results.benchmarks) benchmarks.push_back(entry_to_json(entry));
  return {{"context", context}, {"benchmarks", benchmarks}};
}

Results results_from_json(const Json& json, const std::string& source) {
  const JsonView root(json, source);
  root.allow_only({"context", "benchmarks"});
  const JsonView context = root.at("context");
  const JsonView dsgd = context.at("dsgd");
  const auto version = dsgd.at("schema_version").integer();
  if (version != kSchemaVersion) {
    dsgd.at("schema_version")
        .fail("unsupported schema version " + std::to_string(version) + "; this dsgd reads " +
              std::to_string(kSchemaVersion));
  }
  Results results;
  results.provenance.date = context.at("date").string();
  results.provenance.host_name = context.at("host_name").string();
  results.provenance.dsgd_version = dsgd.at("version").string();
  results.provenance.git_commit = dsgd.at("git_commit").string();
  results.provenance.command = dsgd.at("command").string();
  results.executable = context.at("executable").string();
  results.num_cpus = context.at("num_cpus").integer();
  if (context.has("interrupted")) results.interrupted = context.at("interrupted").boolean();
  const JsonView benchmarks = root.at("benchmarks");
  for (std::size_t i = 0; i < benchmarks.size(); ++i) results.benchmarks.push_back(entry_from_json(benchmarks.at(i)));
  return results;
}

void write_results(const std::filesystem::path& path, const Results& results) {
  write_file_atomically(path, to_json(results).dump(2) + "\n");
}

Results read_results(const std::filesystem::path& path) {
  const Json json = read_json_file(path);
  return results_from_json(json, path.string());
}

}  // namespace dsgd::reports
