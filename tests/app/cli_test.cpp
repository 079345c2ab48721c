#include "app/cli.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "algorithms/algorithm.hpp"
#include "app/cli_units.hpp"
#include "app/run_common.hpp"
#include "core/atomic_file.hpp"
#include "core/collectives.hpp"
#include "core/json.hpp"
#include "core/nn/backend.hpp"
#include "core/subprocess.hpp"
#include "reports/report.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::app {
namespace {

namespace fs = std::filesystem;

using Outcome = dsgd::testing::CliOutcome;
using dsgd::testing::contains;

Outcome dsgd(const std::vector<std::string>& args) { return dsgd::testing::run_dsgd(args); }

TEST(AppCli, VersionFromTheRealExecutable) {
  const auto result = dsgd::testing::run_dsgd_executable({"--version"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "dsgd 0.1.0 (commit ")) << result.output;
  EXPECT_TRUE(contains(result.output, "SimGrid 3.")) << result.output;
}

TEST(AppCli, UnknownCommandExitsTwoAndListsTheValidOnes) {
  const auto result = dsgd::testing::run_dsgd_executable({"simulat"});
  EXPECT_EQ(result.exit_code, kExitUsage);
  EXPECT_TRUE(contains(result.output, "unknown command 'simulat'; did you mean 'simulate'? valid values are: "))
      << result.output;
  EXPECT_TRUE(contains(result.output, "models")) << result.output;
  EXPECT_TRUE(contains(result.output, "reproduce")) << result.output;
}

TEST(AppCli, UnknownModelAndPlatformNamesListTheValidOnes) {
  auto outcome = dsgd({"models", "show", "resnet5"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "unknown model 'resnet5'; did you mean 'resnet50'? valid values are: "))
      << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "resnet50")) << outcome.err;

  outcome = dsgd({"platforms", "show", "cori-knl-typo"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "unknown platform or link 'cori-knl-typo'; valid values are: ")) << outcome.err;
}

// A mistyped command, subcommand or option names the command it concerns, suggests the nearest valid name and points
// to that command's help; a command that needs one of its commands lists them.
TEST(AppCli, UsageErrorsSuggestTheNearestNameAndPointToTheCommandsHelp) {
  const std::map<std::vector<std::string>, std::string> expected = {
      {{"bench", "transport"},
       "dsgd: unknown dsgd bench command 'transport'; did you mean 'transports'? valid values are: allreduce, gemm, "
       "transports, roofline, layers\n"},
      {{"bench", "transports", "--max-byte", "5"},
       "dsgd: dsgd bench transports: unknown option --max-byte; did you mean --max-bytes? (run `dsgd bench "
       "transports --help`)\n"},
      {{"simulate", "--plaform=dgx1-ib"},
       "dsgd: dsgd simulate: unknown option --plaform; did you mean --platform? (run `dsgd simulate --help`)\n"},
      {{"bench"},
       "dsgd: dsgd bench needs a command: allreduce, gemm, transports, roofline, layers (run `dsgd bench "
       "--help`)\n"},
      {{"bench", "transports", "--max-bytes", "16MB", "--no-such"},
       "dsgd: dsgd bench transports: unknown option --no-such (run `dsgd bench transports --help`)\n"}};
  for (const auto& [args, message] : expected) {
    const auto outcome = dsgd(args);
    EXPECT_EQ(outcome.code, kExitUsage) << args[0];
    EXPECT_EQ(outcome.err, message);
  }
  const auto top = dsgd({"--bogus"});
  EXPECT_EQ(top.code, kExitUsage);
  EXPECT_TRUE(contains(top.err, "dsgd: dsgd needs a command: calibrate, models, ")) << top.err;
  EXPECT_TRUE(contains(top.err, "; --bogus is not an option of dsgd (run `dsgd --help`)")) << top.err;
}

// A study runs on its own platforms, models and sizes: an option it would ignore is refused by name, with where it
// runs; a weak-scaling run refuses the study's own option.
TEST(AppCli, ASimulatedStudyRefusesTheOptionsItDoesNotUse) {
  const std::map<std::vector<std::string>, std::string> refused = {
      {{"simulate", "--study", "schemes", "--platform", "my-cluster.json"},
       "dsgd: simulate: --platform is not used by --study schemes; it runs on p100-roce-25g and dgx1-ib\n"},
      {{"simulate", "--study", "table4", "--workers", "3"},
       "dsgd: simulate: --workers is not used by --study table4; it runs on cori-knl\n"},
      {{"simulate", "--study", "schemes", "--fidelity", "flow", "--workers", "8"},
       "dsgd: simulate: --fidelity is not used by --study schemes; it runs on p100-roce-25g and dgx1-ib\n"},
      {{"simulate", "--study", "p100", "--batch", "32"},
       "dsgd: simulate: --batch is not used by --study p100; it runs on dgx1-ib\n"},
      {{"simulate", "--algo", "sync-sgd", "--workers", "2", "--study-iterations", "3"},
       "dsgd: simulate: --study-iterations is not used without --study; a weak-scaling run takes --iterations\n"}};
  for (const auto& [args, message] : refused) {
    const auto outcome = dsgd(args);
    EXPECT_EQ(outcome.code, kExitUsage) << args[2];
    EXPECT_EQ(outcome.err, message);
  }
  const auto unknown = dsgd({"simulate", "--study", "tabel4"});
  EXPECT_EQ(unknown.code, kExitUsage);
  EXPECT_TRUE(contains(unknown.err, "unknown study 'tabel4'; did you mean 'table4'? valid values are: table4, "))
      << unknown.err;
  EXPECT_TRUE(contains(unknown.err, "schemes")) << unknown.err;
}

// Sizes in bytes take decimal and binary units; anything else is refused with the units there are.
// An option one algorithm declares in its file (wfbp-sgd's --first-bucket-bytes) reaches `run` and `simulate` with
// units, dsgd-mpi's arguments and the results; another algorithm refuses it by name.
TEST(AppCli, AnAlgorithmsOwnOptionIsTakenByItAndRefusedByTheOthers) {
  auto outcome = dsgd({"simulate", "--algo", "sync-sgd", "--workers", "2", "--first-bucket-bytes", "1MiB"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "--first-bucket-bytes is not an option of sync-sgd; it is wfbp-sgd's"))
      << outcome.err;
  outcome = dsgd({"simulate", "--algo", "wfbp-sgd", "--workers", "2", "--model", "lenet", "--iterations", "1",
                  "--first-bucket-bytes", "1MiB"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  RunCli cli;
  cli.run.algorithm = "wfbp-sgd";
  cli.run.hyper.own["first-bucket-bytes"] = 1048576;
  const auto arguments = run_arguments(cli);
  const auto at = std::find(arguments.begin(), arguments.end(), "--first-bucket-bytes");
  ASSERT_NE(at, arguments.end());
  EXPECT_EQ(*std::next(at), "1048576");
  outcome = dsgd({"run", "--algo", "sync-sgd", "--workers", "2", "--iterations", "1", "--first-bucket-bytes", "1"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "not an option of sync-sgd")) << outcome.err;
}

TEST(AppCli, ByteSizesTakeDecimalAndBinaryUnits) {
  auto outcome = dsgd({"bench", "transports", "--max-bytes", "16Mo"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "--max-bytes: mo unit not recognized")) << outcome.err;
  CLI::App app;
  double bytes = 0;
  app.add_option("--max-bytes", bytes)->transform(byte_sizes());
  for (const auto& [text, value] : std::map<std::string, double>{
           {"16MiB", 16.0 * 1024 * 1024}, {"64MB", 64e6}, {"4k", 4e3}, {"2GiB", 2.0 * (1 << 30)}, {"512", 512}}) {
    app.parse(std::vector<std::string>{text, "--max-bytes"});
    EXPECT_DOUBLE_EQ(bytes, value) << text;
  }
}

// `--backend cuda` is taken by every algorithm and executor; without a device it stops before training with one
// line naming what is missing; a simulation refuses it (it prices the platform's devices instead).
using AppCliBackend = dsgd::testing::ScratchDirTest;

TEST_F(AppCliBackend, TheCudaBackEndIsRefusedWithOneLineWhereThereIsNoDevice) {
  if (nn::backend_device_count("cuda") > 0) GTEST_SKIP() << "a CUDA device is present here";
  dsgd::testing::write_synthetic_idx_folder(dir_, 64, 16);
  const std::string data = "idx:" + dir_.string();
  for (const auto& algorithm : algorithms::algorithm_names()) {
    for (const std::string executor : {"threads", "mpi"}) {
      const auto outcome = dsgd({"run", "--algo", algorithm, "--workers", "2", "--executor", executor, "--backend",
                                 "cuda", "--iterations", "2", "--data", data});
      EXPECT_EQ(outcome.code, kExitFailure) << algorithm << ", " << executor;
      EXPECT_EQ(outcome.err,
                "dsgd: run: --backend cuda needs a CUDA device, and this machine has none (no GPU, or no "
                "NVIDIA driver)\n")
          << algorithm << ", " << executor;
    }
  }
  const auto simulated = dsgd({"run", "--executor", "simgrid", "--platform", "m40-cluster", "--backend", "cuda",
                               "--iterations", "2", "--data", data});
  EXPECT_EQ(simulated.code, kExitUsage);
  EXPECT_TRUE(contains(simulated.err, "--backend cuda runs natively (threads, mpi)")) << simulated.err;
  EXPECT_EQ(dsgd({"run", "--backend", "tpu", "--iterations", "2", "--data", data}).code, kExitUsage);
}

// `dsgd run --executor mpi --hostfile F` (the real executable, which finds dsgd-mpi beside it): a hostfile of this
// machine's slots runs; a malformed one is refused with its file and line before anything starts.
TEST_F(AppCliBackend, AnMpiRunTakesAHostfile) {
  dsgd::testing::write_synthetic_idx_folder(dir_, 64, 16);
  const auto run_with = [&](const std::string& hosts) {
    std::ofstream(dir_ / "hosts") << hosts;
    return dsgd::testing::run_dsgd_executable({"run", "--executor", "mpi", "--workers", "2", "--iterations", "4",
                                               "--eval-every", "2", "--batch", "8", "--data", "idx:" + dir_.string(),
                                               "--hostfile", (dir_ / "hosts").string()});
  };
  const auto ran = run_with("localhost slots=2\n");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_TRUE(contains(ran.output, "--hostfile " + (dir_ / "hosts").string())) << ran.output;
  const auto refused = run_with("localhost slots=two\n");
  EXPECT_EQ(refused.exit_code, kExitUsage) << refused.output;
  EXPECT_EQ(refused.output,
            "dsgd: " + (dir_ / "hosts").string() + ":1: 'slots' needs a count from 1 to 1000000, got 'two'\n");
}

TEST(AppCli, UsageErrorsExitTwo) {
  EXPECT_EQ(dsgd({}).code, kExitUsage);
  EXPECT_EQ(dsgd({"models", "--frobnicate"}).code, kExitUsage);
  EXPECT_EQ(dsgd({"models", "show"}).code, kExitUsage);
}

TEST(AppCli, EverySubcommandHasHelp) {
  for (const char* command : {"models", "platforms", "report", "reproduce", "bench", "calibrate"}) {
    const auto outcome = dsgd({command, "--help"});
    EXPECT_EQ(outcome.code, 0) << command;
    EXPECT_TRUE(contains(outcome.out, command)) << outcome.out;
  }
}

TEST(AppCli, ModelsPrintsTheZooTable) {
  const auto outcome = dsgd({"models"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "vgg16")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "138,357,544")) << outcome.out;  // VGG-16's published count, in its column
  const auto layers = dsgd({"models", "show", "lenet"});
  ASSERT_EQ(layers.code, 0) << layers.err;
  EXPECT_TRUE(contains(layers.out, "431080 parameters")) << layers.out;
}

TEST(AppCli, PlatformsListsAndShows) {
  const auto list = dsgd({"platforms"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_TRUE(contains(list.out, "dragonfly")) << list.out;
}

using AppReproduce = dsgd::testing::ScratchDirTest;

TEST_F(AppReproduce, WritesTheReportWithModelAndPlatformTables) {
  const auto out = dir_ / "report";
  // The training experiment is left out: it is a benchmark run (tens of seconds), not a unit test.
  const auto outcome = dsgd({"reproduce", "--out", out.string(), "--only", "models", "platforms"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const std::string index = read_text_file(out / "index.md");
  EXPECT_TRUE(contains(index, "## Model zoo")) << index;
  EXPECT_TRUE(contains(index, "## Platform catalog")) << index;
  EXPECT_TRUE(contains(index, "| resnet50 |")) << index;
  EXPECT_TRUE(fs::exists(out / "tables" / "models-totals.csv"));
  EXPECT_TRUE(fs::exists(out / "figures" / "models-flops-per-parameter.png"));
  EXPECT_TRUE(fs::exists(out / "figures" / "models-flops-per-parameter.pdf"));
  EXPECT_TRUE(fs::exists(out / "results" / "models.json"));
  for (const auto& item : fs::directory_iterator(dir_)) {
    EXPECT_EQ(item.path().filename(), "report") << "left behind: " << item.path();
  }
}

TEST_F(AppReproduce, FiguresDrawOtherExperimentsResultsWhenTheyRan) {
  // Seconds each: Table 3 in simulation, and the lost-update runs, whose figure also plots the hot variant's.
  const auto out = dir_ / "report";
  const auto outcome = dsgd({"reproduce", "--out", out.string(), "--only", "table3-simulated", "dogwild-lost-updates",
                             "dogwild-lost-updates-hot"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const std::string index = read_text_file(out / "index.md");
  // The measured Table 3 did not run: its bars are left out and the report says so under the figure.
  EXPECT_TRUE(contains(index, "Not drawn: measured (experiment 'easgd-variants' did not run).")) << index;
  EXPECT_TRUE(fs::exists(out / "figures" / "table3-simulated-breakdown.png"));
  const std::string breakdown = read_text_file(out / "figures" / "table3-simulated-breakdown.dat");
  EXPECT_TRUE(contains(breakdown, "\"sync-easgd3 / published\"")) << breakdown;
  EXPECT_FALSE(contains(breakdown, "/ measured\"")) << breakdown;
  // The hot variant ran, so the lost-update figure has its series, whether or not it had a point to draw.
  EXPECT_FALSE(contains(index, "experiment 'dogwild-lost-updates-hot' did not run")) << index;
  EXPECT_TRUE(contains(index, "Unsynchronised additions lost")) << index;
}

TEST_F(AppReproduce, AFailingExperimentLeavesThePreviousReportUntouched) {
  const auto out = dir_ / "report";
  mark_as_owned(out);  // a report of dsgd's
  write_file_atomically(out / "index.md", "previous report\n");
  const auto manifest = dir_ / "m.json";
  write_file_atomically(manifest, R"({"name": "m", "title": "M", "experiments": [
      {"id": "ok", "title": "ok", "description": "", "command": ["models", "--results", "{results}"]},
      {"id": "bad", "title": "bad", "description": "", "command": ["models", "show", "nosuch", "{results}"]}]})");
  const auto outcome = dsgd({"reproduce", "--out", out.string(), "--manifest", manifest.string()});
  EXPECT_EQ(outcome.code, 1) << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "experiment 'bad' failed")) << outcome.err;
  EXPECT_EQ(read_text_file(out / "index.md"), "previous report\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& item : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 2U) << "only report/ and m.json remain";
}

TEST_F(AppReproduce, SizeStandsInForItsPlaceholder) {
  const auto manifest = dir_ / "m.json";
  write_file_atomically(manifest, R"({"name": "m", "title": "M", "experiments": [
      {"id": "sized", "title": "sized", "description": "",
       "command": ["models", "show", "model-{size}", "{results}"]}]})");
  const auto outcome =
      dsgd({"reproduce", "--out", (dir_ / "r").string(), "--manifest", manifest.string(), "--size", "full"});
  EXPECT_EQ(outcome.code, 1) << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "dsgd models show model-full ")) << outcome.err;
  const auto wrong = dsgd({"reproduce", "--out", (dir_ / "r").string(), "--size", "huge"});
  EXPECT_EQ(wrong.code, kExitUsage) << wrong.err;
  EXPECT_TRUE(contains(wrong.err, "huge")) << wrong.err;
}

// Three fast experiments, two of them the first look (one without an expected time).
fs::path write_first_look_manifest(const fs::path& dir) {
  const auto manifest = dir / "m.json";
  write_file_atomically(manifest, R"({"name": "m", "title": "M", "experiments": [
      {"id": "zoo", "title": "Zoo", "description": "", "command": ["models", "--results", "{results}"],
       "first_look": true, "expected_s": 2},
      {"id": "catalog", "title": "Catalog", "description": "", "command": ["platforms", "--results", "{results}"],
       "first_look": true},
      {"id": "zoo-again", "title": "Zoo again", "description": "", "command": ["models", "--results", "{results}"],
       "expected_s": 95}]})");
  return manifest;
}

std::vector<std::string> timed_ids(const fs::path& report) {
  std::vector<std::string> ids;
  for (const auto& timing : reports::read_timings(report / "results" / "timings.json")) ids.push_back(timing.id);
  return ids;
}

TEST_F(AppReproduce, PlainRunsTheFirstLookAndAllRunsEveryExperiment) {
  const auto manifest = write_first_look_manifest(dir_);
  const auto first = dsgd({"reproduce", "--out", (dir_ / "first").string(), "--manifest", manifest.string()});
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(timed_ids(dir_ / "first"), (std::vector<std::string>{"zoo", "catalog"}));
  EXPECT_FALSE(fs::exists(dir_ / "first" / "results" / "zoo-again.json"));
  const std::string index = read_text_file(dir_ / "first" / "index.md");
  EXPECT_TRUE(contains(index,
                       "Not run in this report (1 of 3 experiments): zoo-again. `dsgd reproduce --all` runs "
                       "every experiment."))
      << index;

  const auto all = dsgd({"reproduce", "--out", (dir_ / "all").string(), "--manifest", manifest.string(), "--all"});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(timed_ids(dir_ / "all"), (std::vector<std::string>{"zoo", "catalog", "zoo-again"}));
  EXPECT_FALSE(contains(read_text_file(dir_ / "all" / "index.md"), "Not run"))
      << read_text_file(dir_ / "all" / "index.md");

  // --only picks from every experiment, first look or not; with --all it is a usage error.
  const auto only =
      dsgd({"reproduce", "--out", (dir_ / "only").string(), "--manifest", manifest.string(), "--only", "zoo-again"});
  ASSERT_EQ(only.code, 0) << only.err;
  EXPECT_EQ(timed_ids(dir_ / "only"), (std::vector<std::string>{"zoo-again"}));
  EXPECT_EQ(dsgd({"reproduce", "--out", (dir_ / "x").string(), "--all", "--only", "models"}).code, kExitUsage);
}

TEST_F(AppReproduce, PrintsThePlanThenALinePerStartAndEnd) {
  const auto manifest = write_first_look_manifest(dir_);
  const auto outcome = dsgd({"reproduce", "--out", (dir_ / "r").string(), "--manifest", manifest.string(), "--all"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const std::string& err = outcome.err;
  EXPECT_TRUE(contains(err, "dsgd reproduce: all 3 experiments, expected wall time on 2 cores (? = not measured):\n"))
      << err;
  // Every experiment with its expected time, "?" where the manifest has none, and the total of the known ones.
  EXPECT_TRUE(contains(err, "\n  zoo               2.0 s\n")) << err;
  EXPECT_TRUE(contains(err, "\n  catalog               ?\n")) << err;
  EXPECT_TRUE(contains(err, "\n  zoo-again    1 min 35 s\n")) << err;
  EXPECT_TRUE(contains(err, "\n  total        1 min 37 s + 1 unmeasured\n")) << err;
  EXPECT_LT(err.find("total"), err.find("[1/3] zoo: start")) << "the plan comes first";
  EXPECT_TRUE(contains(err,
                       "[1/3] zoo: start, expected 2.0 s (elapsed 0.0 s, about 1 min 37 s left + 1 unmeasured): "
                       "dsgd models --results "))
      << err;
  EXPECT_TRUE(contains(err, "[2/3] catalog: start, expected ? (elapsed ")) << err;
  EXPECT_TRUE(contains(err, "about 1 min 35 s left)\n[3/3] zoo-again: start")) << err;
  EXPECT_TRUE(contains(err, "[3/3] zoo-again: done in ")) << err;
  EXPECT_TRUE(contains(err, "about 0.0 s left)\nrendering the report (3 experiments in ")) << err;
  for (const char* id : {"zoo", "catalog", "zoo-again"}) {
    EXPECT_TRUE(contains(err, std::string("] ") + id + ": done in ")) << id << ": " << err;
  }
  EXPECT_FALSE(contains(err, "\r")) << "one line per event, for log files";
}

// The report and its timings file say how long each experiment took and how to rerun it alone.
TEST_F(AppReproduce, TheReportGivesEachExperimentsWallTimeAndCommands) {
  const auto manifest = write_first_look_manifest(dir_);
  const auto out = dir_ / "r";
  const auto outcome = dsgd({"reproduce", "--out", out.string(), "--manifest", manifest.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const auto timings = reports::read_timings(out / "results" / "timings.json");
  ASSERT_EQ(timings.size(), 2U);
  EXPECT_EQ(timings[0].id, "zoo");
  EXPECT_GT(timings[0].wall_s, 0);
  EXPECT_EQ(timings[0].command, "dsgd models --results " + (out / "results" / "zoo.json").string());
  EXPECT_EQ(timings[0].reproduce, "dsgd reproduce --only zoo --manifest " + manifest.string());
  const std::string index = read_text_file(out / "index.md");
  const std::string rerun = "`dsgd reproduce --only zoo --manifest " + manifest.string() + "`";
  EXPECT_TRUE(contains(index, "| zoo | " + reports::duration_text(timings[0].wall_s) + " | " + rerun + " |")) << index;
  EXPECT_TRUE(contains(index, "Produced by `dsgd models --results " + (out / "results" / "zoo.json").string() +
                                  "` in " + reports::duration_text(timings[0].wall_s) + " of wall time; " + rerun +
                                  " reruns it alone."))
      << index;
}

TEST_F(AppReproduce, MalformedManifestIsAnInputError) {
  const auto manifest = dir_ / "m.json";
  write_file_atomically(manifest, "{\"name\": \"m\",\n \"title\": }");
  const auto outcome = dsgd({"reproduce", "--out", (dir_ / "r").string(), "--manifest", manifest.string()});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, manifest.string() + ":2:")) << outcome.err;
}

}  // namespace
}  // namespace dsgd::app

namespace dsgd::app {
namespace {

// The same scratch folder as the reproduce tests.
using AppBench = AppReproduce;

TEST_F(AppBench, AllreduceOnThreadsAndSimgridWritesResults) {
  const auto threads_file = dir_ / "threads.json";
  auto outcome = dsgd({"bench", "allreduce", "--executor", "threads", "--ranks", "3", "--sizes", "1001,4096",
                       "--rounds", "2", "--results", threads_file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "rabenseifner")) << outcome.out;
  std::size_t entries = 0;
  for (const auto& entry : reports::read_results(threads_file).benchmarks) {
    ++entries;
    EXPECT_EQ(entry.executor, "threads");
    EXPECT_EQ(entry.ranks, 3);
    EXPECT_GT(entry.counters.at("algbw_Bps"), 0);
    // nccl-tests: busbw = algbw * 2 (P - 1) / P
    EXPECT_DOUBLE_EQ(entry.counters.at("busbw_Bps"), entry.counters.at("algbw_Bps") * 4.0 / 3.0);
  }
  EXPECT_EQ(entries, 2 * kAllreduceAlgorithms.size());  // 2 sizes x every algorithm

  const auto simgrid_file = dir_ / "simgrid.json";
  outcome = dsgd({"bench", "allreduce", "--executor", "simgrid", "--ranks", "4", "--sizes", "262144", "--platform",
                  "m40-cluster", "--results", simgrid_file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  for (const auto& entry : reports::read_results(simgrid_file).benchmarks) {
    EXPECT_EQ(entry.fidelity, "message");
    EXPECT_NEAR(entry.real_time, entry.counters.at("closed_form_s"), 0.01 * entry.real_time) << entry.name;
  }

  const auto flow_file = dir_ / "flow.json";
  outcome = dsgd({"bench", "allreduce", "--executor", "simgrid", "--ranks", "4", "--sizes", "262144", "--platform",
                  "m40-cluster", "--fidelity", "flow", "--results", flow_file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "flow fidelity")) << outcome.out;
  for (const auto& entry : reports::read_results(flow_file).benchmarks) {
    EXPECT_EQ(entry.fidelity, "flow");
    EXPECT_NEAR(entry.real_time, entry.counters.at("closed_form_s"), 0.01 * entry.real_time) << entry.name;
  }
}

// A program that keeps a core busy beside the measurement: the table and the results say the numbers are suspect.
TEST_F(AppBench, AnAllreduceMeasuredBesideABusyProgramIsFlagged) {
  const pid_t busy = ::fork();
  ASSERT_GE(busy, 0);
  if (busy == 0) {
    ::execl("/bin/sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // /proc/stat counts in 10 ms ticks: the loop runs before the measurement starts, and the measurement lasts some
  // 0.4-1 s (400 rounds of 4 MB), so the busy core shows above the tick's noise. 30 rounds of 1 MB (about 5 ms)
  // once read below the threshold in a default-suite run.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto file = dir_ / "busy.json";
  const auto outcome = dsgd({"bench", "allreduce", "--executor", "threads", "--ranks", "2", "--sizes", "1048576",
                             "--algorithms", "ring", "--rounds", "400", "--results", file.string()});
  ::kill(busy, SIGKILL);
  ::waitpid(busy, nullptr, 0);
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "warning: other programs kept")) << outcome.out;
  const auto entries = reports::read_results(file).benchmarks;
  ASSERT_EQ(entries.size(), 1U);
  EXPECT_TRUE(contains(entries.front().labels.at("suspect"), "cores busy")) << entries.front().labels.at("suspect");
  // nccl-tests' columns, and the repetitions' range.
  EXPECT_TRUE(contains(outcome.out, "bytes      time us       min us       max us  algbw GB/s  busbw GB/s"))
      << outcome.out;
  EXPECT_LE(entries.front().counters.at("seconds_min"), entries.front().counters.at("seconds_median"));
  EXPECT_LE(entries.front().counters.at("seconds_median"), entries.front().counters.at("seconds_max"));
}

// Two nodes of 8 GPUs: the two-level closed forms beside the ring and the hierarchical ones; none for the others.
TEST_F(AppBench, AllreduceOnNodesOfSeveralRanksHasTwoLevelClosedForms) {
  const auto file = dir_ / "nodes.json";
  const auto outcome =
      dsgd({"bench", "allreduce", "--executor", "simgrid", "--ranks", "16", "--ranks-per-node", "8", "--sizes",
            "262144", "--algorithms", "ring,hierarchical,hierarchical_2d,recursive_doubling", "--platform",
            std::string(DSGD_TEST_DATA_DIR) + "/platforms/gpu8-10gbe.json", "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const auto entries = reports::read_results(file).benchmarks;
  ASSERT_EQ(entries.size(), 4U);
  for (const auto& entry : entries) {
    if (entry.algorithm == "recursive_doubling") {
      EXPECT_EQ(entry.counters.count("closed_form_s"), 0U);
      continue;
    }
    EXPECT_NEAR(entry.real_time, entry.counters.at("closed_form_s"), 0.01 * entry.real_time) << entry.name;
  }
}

TEST(AppCli, BenchRejectsUnknownExecutorsAndMissingPlatforms) {
  auto outcome = dsgd({"bench", "allreduce", "--executor", "gpu"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "valid values are: threads, simgrid, mpi")) << outcome.err;
  outcome = dsgd({"bench", "allreduce", "--executor", "simgrid"});
  EXPECT_EQ(outcome.code, kExitUsage);
  outcome = dsgd({"bench", "allreduce", "--executor", "simgrid", "--platform", "m40-cluster", "--fidelity", "packet"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "unknown fidelity 'packet'; valid values are: auto, message, flow")) << outcome.err;
  outcome = dsgd({"bench", "allreduce", "--algorithms", "butterfly"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "unknown allreduce algorithm 'butterfly'")) << outcome.err;
}

TEST(AppCli, AlgorithmsListsTheCatalogOneLineEach) {
  const auto outcome = dsgd({"algorithms"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  std::istringstream lines(outcome.out);
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    ++count;
    EXPECT_TRUE(contains(line, "deterministic") || contains(line, "asynchronous")) << line;
  }
  EXPECT_GE(count, 9);
}

using AppRun = dsgd::testing::ScratchDirTest;

TEST_F(AppRun, RunAndStudyWriteTrainingResults) {
  dsgd::testing::write_synthetic_idx_folder(dir_, 480, 100);
  const std::string data = "idx:" + dir_.string();
  const auto file = dir_ / "run.json";
  // The first algorithm of the catalog, by `dsgd algorithms`' first word: this test names none.
  const auto listing = dsgd({"algorithms"});
  const std::string algorithm = listing.out.substr(0, listing.out.find(' '));
  auto outcome = dsgd({"run", "--algo", algorithm, "--workers", "2", "--data", data, "--batch", "16", "--iterations",
                       "20", "--eval-every", "10", "--target-accuracy", "0", "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "test accuracy")) << outcome.out;
  const auto entry = reports::read_results(file).benchmarks.at(0);
  EXPECT_EQ(entry.algorithm, algorithm);
  EXPECT_EQ(entry.executor, "threads");
  EXPECT_EQ(entry.iterations, 20);
  EXPECT_GT(entry.counters.at("test_accuracy"), 0.3);
  EXPECT_GT(entry.breakdown_s.at("for/backward"), 0);
  EXPECT_EQ(entry.labels.at("parameters_fnv1a").size(), 16U);
  ASSERT_EQ(entry.curves.size(), 4U);
  EXPECT_EQ(entry.curves.at(0).points.size(), 2U);

  const auto study_file = dir_ / "study.json";
  outcome = dsgd(
      {"study", "packing", "--workers", "2", "--data", data, "--iterations", "10", "--results", study_file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const auto study = reports::read_results(study_file).benchmarks;
  ASSERT_EQ(study.size(), 2U);
  EXPECT_EQ(study.at(0).labels.at("study"), "packing");
  EXPECT_NE(study.at(0).labels.at("run"), study.at(1).labels.at("run"));
  EXPECT_GT(study.at(0).counters.at("comm_ratio"), 0);

  outcome = dsgd({"study", "figure-13"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "unknown study 'figure-13'")) << outcome.err;
  outcome = dsgd({"run", "--data", data, "--target-accuracy", "0"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "no budget")) << outcome.err;
}

// --allreduce reaches the run and its results; --ranks-per-node groups the threads into nodes (uneven here).
TEST_F(AppRun, RunAndStudyTakeTheAllreduce) {
  dsgd::testing::write_synthetic_idx_folder(dir_, 160, 50);
  const std::string data = "idx:" + dir_.string();
  const auto file = dir_ / "run.json";
  auto outcome = dsgd({"run", "--workers", "3", "--data", data, "--batch", "16", "--iterations", "4", "--eval-every",
                       "4", "--target-accuracy", "0", "--allreduce", "hierarchical_2d", "--ranks-per-node", "2",
                       "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(reports::read_results(file).benchmarks.at(0).algorithm_options.at("allreduce"), "hierarchical_2d");

  const auto study_file = dir_ / "study.json";
  outcome = dsgd({"study", "packing", "--workers", "2", "--data", data, "--iterations", "4", "--allreduce",
                  "hierarchical", "--results", study_file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  for (const auto& entry : reports::read_results(study_file).benchmarks) {
    EXPECT_EQ(entry.algorithm_options.at("allreduce"), "hierarchical") << entry.name;
  }

  outcome = dsgd({"run", "--data", data, "--iterations", "4", "--allreduce", "tree"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "hierarchical_2d")) << outcome.err;
}

TEST_F(AppRun, BatchSizeStudyRecordsGlobalBatchAndRules) {
  // A worker's batch is at most the training set (4096 images on 4 workers: 1024 each).
  dsgd::testing::write_synthetic_idx_folder(dir_, 1040, 100);
  const auto file = dir_ / "study.json";
  // One epoch of 1040 images: 16 and 4 iterations at 64 and 256 images, at least one at 1024 and 4096.
  const auto outcome =
      dsgd({"study", "batch-size", "--data", "idx:" + dir_.string(), "--epochs", "1", "--results", file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const auto entries = reports::read_results(file).benchmarks;
  ASSERT_EQ(entries.size(), 12U);
  std::map<std::string, int> per_rules;
  for (const auto& entry : entries) {
    EXPECT_EQ(entry.labels.at("study"), "batch-size");
    const std::string rules = entry.labels.at("rules");
    ++per_rules[rules];
    const int global = entry.algorithm_options.at("global_batch").get<int>();
    EXPECT_EQ(entry.iterations, std::max(1, static_cast<int>(std::lround(1040.0 / global)))) << global;
    const bool scaled = entry.algorithm_options.at("lr_scaling") == "linear";
    EXPECT_EQ(scaled, rules != "no rule") << rules;
    EXPECT_EQ(entry.algorithm_options.at("lars").get<bool>(), rules.find("LARS") != std::string::npos) << rules;
  }
  EXPECT_EQ(per_rules.size(), 3U);
  for (const auto& [rules, count] : per_rules) EXPECT_EQ(count, 4) << rules;
}

// A learning-rate sweep in numeric simulation: every method tries each rate at the first configuration and keeps
// its best (a rate that diverges never wins) at every configuration.
TEST_F(AppRun, StudySweepsTheRateAndKeepsTheBestAtEveryConfiguration) {
  dsgd::testing::write_synthetic_idx_folder(dir_, 480, 50);
  const auto file = dir_ / "sweep.json";
  const auto outcome = dsgd({"study",
                             "methods",
                             "--data",
                             "idx:" + dir_.string(),
                             "--executor",
                             "simgrid",
                             "--platform",
                             "cori-knl",
                             "--workers",
                             "2,3",
                             "--lr-sweep",
                             "0.01,1000",
                             "--budget-iterations",
                             "4",
                             "--batch",
                             "8",
                             "--eval-every",
                             "4",
                             "--test-images",
                             "50",
                             "--results",
                             file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  std::map<std::string, std::map<std::string, int>> phases;  // algorithm -> phase -> runs
  for (const auto& entry : reports::read_results(file).benchmarks) {
    const std::string& phase = entry.labels.at("phase");
    ++phases[entry.algorithm][phase];
    EXPECT_EQ(entry.executor, "simgrid");
    EXPECT_EQ(entry.platform, "cori-knl");
    if (phase == "sweep" && entry.labels.at("lr") == "1000") {
      EXPECT_EQ(entry.labels.at("stop_reason"), "diverged") << entry.algorithm;
    }
    if (phase == "chosen") {
      EXPECT_EQ(entry.labels.at("lr"), "0.01") << entry.algorithm;
      EXPECT_NE(entry.labels.at("stop_reason"), "diverged") << entry.algorithm;
    }
  }
  EXPECT_GE(phases.size(), 9U);  // every method of the catalog
  for (const auto& [algorithm, counts] : phases) {
    EXPECT_EQ(counts.at("sweep"), 2) << algorithm;   // both rates, at 2 workers
    EXPECT_EQ(counts.at("chosen"), 2) << algorithm;  // 2 and 3 workers
  }
}

TEST_F(AppRun, TrainAndRunTakeTheLargeBatchRules) {
  dsgd::testing::write_synthetic_idx_folder(dir_, 160, 100);
  const std::string data = "idx:" + dir_.string();
  const auto file = dir_ / "train.json";
  auto outcome = dsgd({"train",
                       "--data",
                       data,
                       "--batch",
                       "16",
                       "--iterations",
                       "4",
                       "--eval-every",
                       "4",
                       "--target-accuracy",
                       "0",
                       "--lr-scaling",
                       "linear",
                       "--reference-batch",
                       "8",
                       "--warmup-iterations",
                       "2",
                       "--lars",
                       "--lars-trust",
                       "0.002",
                       "--results",
                       file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  // The last line names the back end whole, however long the libraries' descriptions are.
  EXPECT_TRUE(contains(outcome.out, " OpenMP threads\n")) << outcome.out;
  EXPECT_EQ(outcome.out.back(), '\n');
  const auto options = reports::read_results(file).benchmarks.at(0).algorithm_options;
  EXPECT_EQ(options.at("scaled_learning_rate").get<double>(), 0.02F);  // 0.01 x 16 / 8
  EXPECT_EQ(options.at("warmup_iterations"), 2);
  EXPECT_EQ(options.at("lars"), true);
  EXPECT_EQ(options.at("lars_trust").get<double>(), 0.002F);

  outcome = dsgd({"train", "--data", data, "--iterations", "4", "--warmup-iterations", "2"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "it needs --lr-scaling linear")) << outcome.err;
  outcome = dsgd({"run", "--data", data, "--iterations", "4", "--lr-scaling", "sqrt"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "unknown lr scaling 'sqrt'; valid values are: none, linear")) << outcome.err;
  outcome = dsgd({"run", "--data", data, "--iterations", "4", "--lars", "--lars-trust", "-1"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "--lars-trust must be > 0")) << outcome.err;
}

TEST_F(AppRun, TestImagesEvaluatesOnAPrefixOfTheTestSet) {
  dsgd::testing::write_synthetic_idx_folder(dir_, 160, 100);
  const std::string data = "idx:" + dir_.string();
  const auto file = dir_ / "run.json";
  const auto accuracy = [&](const std::string& test_images) {
    const auto outcome =
        dsgd({"run", "--workers", "1", "--data", data, "--batch", "16", "--iterations", "4", "--eval-every", "4",
              "--target-accuracy", "0", "--test-images", test_images, "--results", file.string()});
    EXPECT_EQ(outcome.code, 0) << outcome.err;
    return reports::read_results(file).benchmarks.at(0);
  };
  // 7 images: an accuracy in sevenths, which out of 100 images only 0 and 1 are.
  const auto seven = accuracy("7");
  EXPECT_EQ(seven.counters.at("test_images_at_most"), 7);
  const double sevenths = seven.counters.at("test_accuracy") * 7;
  EXPECT_NEAR(sevenths, std::round(sevenths), 1e-6);
  // More than the test set has: all of it, as 0 does.
  EXPECT_EQ(accuracy("1000").counters.at("test_accuracy"), accuracy("0").counters.at("test_accuracy"));

  const auto outcome = dsgd({"run", "--data", data, "--iterations", "4", "--test-images", "-1"});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "--test-images must be >= 0")) << outcome.err;
}

}  // namespace
}  // namespace dsgd::app
