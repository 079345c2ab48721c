#pragma once
// The results schema: one JSON format for every dsgd run, measured or simulated (docs/results-schema.md).
// It is a superset of Google Benchmark's JSON -- a `context` object and a `benchmarks` array whose entries keep
// Google Benchmark's fields (name, run_name, run_type, iterations, real_time, cpu_time, time_unit, user counters
// as flat numbers) -- so Google Benchmark's compare.py keeps working on dsgd files. dsgd adds, per entry: executor,
// fidelity, platform, algorithm and its options, model, dataset, ranks, seed, a time breakdown per category,
// string labels and curves; and, in the context, provenance (version, commit, host, date, command).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/breakdown.hpp"
#include "core/json.hpp"

namespace dsgd::reports {

inline constexpr int kSchemaVersion = 1;

// Where a result came from.
struct Provenance {
  std::string dsgd_version;
  std::string git_commit;
  std::string host_name;
  std::string date;     // ISO 8601, local time with offset, as Google Benchmark writes it
  std::string command;  // the dsgd command line that produced the file
};

// A series of (x, y) points, e.g. test accuracy against seconds.
struct Curve {
  std::string name;     // e.g. "test_accuracy"
  std::string x_label;  // e.g. "time_s"
  std::string y_label;  // e.g. "accuracy"
  std::vector<std::pair<double, double>> points;
  bool operator==(const Curve&) const = default;
};

// One entry of `benchmarks[]`: one run, one model, one platform -- whatever one row of a table is.
struct Entry {
  // Google Benchmark's fields.
  std::string name;
  std::string run_type = "iteration";
  std::int64_t iterations = 1;
  double real_time = 0;  // in time_unit
  double cpu_time = 0;
  std::string time_unit = "s";
  std::map<std::string, double> counters;  // written as flat numbers beside the fields above

  // dsgd's fields. Empty strings / zero mean "does not apply" and are left out of the file.
  std::string executor;  // threads | mpi | simgrid | analytic | catalog
  std::string fidelity;  // measured | message | flow | analytic | static
  std::string platform;
  std::string algorithm;
  Json algorithm_options = Json::object();
  std::string model;
  std::string dataset;
  std::int64_t ranks = 0;
  std::uint64_t seed = 0;
  std::map<std::string, double> breakdown_s;  // keys are the categories of core/breakdown.hpp
  std::map<std::string, std::string> labels;  // free-form text columns (e.g. a description, a source)
  std::vector<Curve> curves;

  bool operator==(const Entry&) const = default;
};

struct Results {
  Provenance provenance;
  std::string executable;
  std::int64_t num_cpus = 0;
  std::vector<Entry> benchmarks;
  // An interrupt (SIGINT, SIGTERM) stopped the work: the entries are what it had done. Written as
  // context "interrupted": true, left out when false.
  bool interrupted = false;
};

// A results entry of something an executor timed: `seconds` (its real and CPU time, in the executor's seconds) of
// `algorithm` on `ranks` ranks, measured or simulated at `fidelity`.
Entry timed_entry(std::string name, std::string executor, std::string fidelity, std::string algorithm,
                  std::int64_t ranks, double seconds);

// A results entry for a description (a model, a platform, a link): executor "catalog", fidelity "static", the labels
// kind and description.
Entry catalog_entry(std::string name, const std::string& kind, const std::string& description);

// entry.breakdown_s from `breakdown`: the categories that took any time.
void set_breakdown(Entry& entry, const Breakdown& breakdown);

// Provenance for a file written now by this build: version and commit from the build, host and date now.
Provenance current_provenance(const std::string& command);

// Serialises to the schema's JSON (validates breakdown categories first; throws InputError on unknown ones).
Json to_json(const Results& results);

// Parses and validates; `source` names the file in errors. Throws InputError naming source and JSON path.
Results results_from_json(const Json& json, const std::string& source);

// Writes atomically (temp file + rename): a reader sees the old file or the whole new one, never half.
void write_results(const std::filesystem::path& path, const Results& results);

// Reads and validates a results file. A truncated or malformed file is an InputError with file:line:column.
Results read_results(const std::filesystem::path& path);

}  // namespace dsgd::reports
