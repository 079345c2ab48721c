#include "reports/results.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/json.hpp"

namespace dsgd::reports {
namespace {

namespace fs = std::filesystem;

// A scratch folder per test, removed afterwards.
class ReportsResults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dsgd-results-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

Results sample() {
  Results results;
  results.provenance = current_provenance("run --algo sync_easgd");
  results.executable = "/usr/bin/dsgd";
  results.num_cpus = 2;
  Entry entry;
  entry.name = "sync_easgd/lenet/4";
  entry.iterations = 1000;
  entry.real_time = 7.7;
  entry.cpu_time = 15.1;
  entry.counters = {{"test_accuracy", 0.988}, {"images_per_second", 33250.5}};
  entry.executor = "threads";
  entry.fidelity = "measured";
  entry.platform = "this-machine";
  entry.algorithm = "sync_easgd";
  entry.algorithm_options = {{"eta", 0.01}, {"rho", 0.9}, {"variant", "easgd3"}};
  entry.model = "lenet";
  entry.dataset = "fashion-mnist";
  entry.ranks = 4;
  entry.seed = 42;
  entry.breakdown_s = {{"gpu-gpu para", 0.77}, {"for/backward", 6.08}, {"wait", 0.1}};
  entry.labels = {{"note", "a \"quoted\" label, with comma"}};
  entry.curves = {Curve{"test_accuracy", "time_s", "accuracy", {{0.0, 0.1}, {1.5, 0.7}, {7.7, 0.988}}}};
  results.benchmarks = {entry};
  Entry second;
  second.name = "analytic point";
  second.executor = "analytic";
  results.benchmarks.push_back(second);
  return results;
}

TEST_F(ReportsResults, RoundTripsEveryField) {
  const Results written = sample();
  write_results(dir_ / "r.json", written);
  const Results read = read_results(dir_ / "r.json");
  ASSERT_EQ(read.benchmarks.size(), 2U);
  EXPECT_EQ(read.benchmarks[0], written.benchmarks[0]);
  EXPECT_EQ(read.benchmarks[1], written.benchmarks[1]);
  EXPECT_EQ(read.provenance.git_commit, written.provenance.git_commit);
  EXPECT_EQ(read.provenance.command, "run --algo sync_easgd");
  EXPECT_EQ(read.provenance.date, written.provenance.date);
  EXPECT_EQ(read.num_cpus, 2);
}

TEST_F(ReportsResults, IsAGoogleBenchmarkSuperset) {
  // compare.py needs context + benchmarks[] with name, real_time, cpu_time, time_unit, and counters flat.
  const Json json = to_json(sample());
  ASSERT_TRUE(json.contains("context"));
  ASSERT_TRUE(json["context"].contains("date"));
  ASSERT_TRUE(json["context"].contains("host_name"));
  const Json& entry = json["benchmarks"][0];
  for (const char* field : {"name", "run_name", "run_type", "iterations", "real_time", "cpu_time", "time_unit"}) {
    EXPECT_TRUE(entry.contains(field)) << field;
  }
  EXPECT_DOUBLE_EQ(entry["test_accuracy"].get<double>(), 0.988);
}

TEST_F(ReportsResults, ReadsAPlainGoogleBenchmarkEntryWithADsgdContext) {
  // An entry as Google Benchmark writes it, counters and all, is a valid dsgd entry.
  const std::string text = R"({
    "context": {"date": "2026-11-22T10:00:00+00:00", "host_name": "h", "executable": "b", "num_cpus": 2,
                "dsgd": {"schema_version": 1, "version": "0.1.0", "git_commit": "abc", "command": "bench"}},
    "benchmarks": [{"name": "BM_PingPong/8", "family_index": 0, "per_family_instance_index": 0,
                    "run_name": "BM_PingPong/8", "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
                    "threads": 1, "iterations": 1000, "real_time": 210.5, "cpu_time": 209.0, "time_unit": "ns",
                    "bytes_per_second": 3.8e7}]})";
  const Results results = results_from_json(parse_json(text, "inline.json"), "inline.json");
  ASSERT_EQ(results.benchmarks.size(), 1U);
  EXPECT_EQ(results.benchmarks[0].time_unit, "ns");
  EXPECT_DOUBLE_EQ(results.benchmarks[0].counters.at("bytes_per_second"), 3.8e7);
}

TEST_F(ReportsResults, RejectsATruncatedFileNamingFileLineAndColumn) {
  write_results(dir_ / "whole.json", sample());
  const std::string text = read_text_file(dir_ / "whole.json");
  std::ofstream(dir_ / "cut.json") << text.substr(0, text.size() / 2);
  try {
    read_results(dir_ / "cut.json");
    FAIL() << "a truncated file was accepted";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find((dir_ / "cut.json").string() + ":"), std::string::npos) << message;
    EXPECT_NE(message.find("JSON syntax error"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST_F(ReportsResults, RejectsUnknownBreakdownCategoryWithItsPath) {
  Json json = to_json(sample());
  json["benchmarks"][0]["breakdown_s"]["gpu-gpu-para"] = 1.0;
  try {
    results_from_json(json, "x.json");
    FAIL();
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("x.json: /benchmarks/0/breakdown_s"), std::string::npos) << message;
    EXPECT_NE(message.find("gpu-gpu para"), std::string::npos) << "lists the valid ones: " << message;
  }
}

TEST_F(ReportsResults, RejectsMissingFieldsAndNonNumericUnknownFields) {
  Json json = to_json(sample());
  json["benchmarks"][1].erase("real_time");
  EXPECT_THROW(results_from_json(json, "x.json"), InputError);
  json = to_json(sample());
  json["benchmarks"][0]["exectuor"] = "threads";  // a typo must not vanish silently
  EXPECT_THROW(results_from_json(json, "x.json"), InputError);
  json = to_json(sample());
  json["context"]["dsgd"]["schema_version"] = 99;
  EXPECT_THROW(results_from_json(json, "x.json"), InputError);
  for (const char* time : {"real_time", "cpu_time"}) {  // a negative time was accepted (issue 42)
    json = to_json(sample());
    json["benchmarks"][0][time] = -1.0;
    EXPECT_THROW(results_from_json(json, "x.json"), InputError) << time;
  }
}

TEST_F(ReportsResults, WriterRefusesUnknownCategories) {
  Results results = sample();
  results.benchmarks[0].breakdown_s["comms"] = 1.0;
  EXPECT_THROW(write_results(dir_ / "r.json", results), InputError);
  EXPECT_FALSE(fs::exists(dir_ / "r.json"));
}

TEST_F(ReportsResults, AtomicWriteReplacesWholeAndLeavesNoTemporaries) {
  write_results(dir_ / "r.json", sample());
  Results smaller = sample();
  smaller.benchmarks.resize(1);
  write_results(dir_ / "r.json", smaller);
  EXPECT_EQ(read_results(dir_ / "r.json").benchmarks.size(), 1U);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& item : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1U);
}

TEST_F(ReportsResults, MissingFileIsAnInputErrorNamingIt) {
  try {
    read_results(dir_ / "absent.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.json: no such file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dsgd::reports
