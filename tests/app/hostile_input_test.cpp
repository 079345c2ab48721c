// The defects of issue 26 that a hostile user found, each through the command line that showed it: every one must
// now end with exit code 2 and a one-line error that names what is wrong, and leave what was there untouched.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/data/binary_file.hpp"
#include "core/json.hpp"
#include "core/subprocess.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::app {
namespace {

namespace fs = std::filesystem;
using dsgd::testing::contains;

class AppHostileInput : public dsgd::testing::CliScratchTest {
 protected:
  // Exit code 2 and one error line ("dsgd: ...", after whatever progress the command printed) with `part` in it.
  static void expect_input_error(const dsgd::testing::CliOutcome& outcome, const std::string& part) {
    EXPECT_EQ(outcome.code, kExitUsage) << outcome.err;
    std::istringstream lines(outcome.err);
    std::vector<std::string> errors;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("dsgd: ", 0) == 0) errors.push_back(line);
    }
    ASSERT_EQ(errors.size(), 1U) << outcome.err;
    EXPECT_TRUE(contains(errors.front(), part)) << outcome.err;
  }

  static std::vector<std::string> simulate_to(const std::string& results) {
    return {"simulate",  "--platform", "m40-cluster",  "--model", "lenet",     "--algo", "sync-sgd",
            "--workers", "2",          "--iterations", "1",       "--results", results};
  }

  // The m40-cluster platform file with `from` replaced by `to` in its text.
  fs::path edited_platform(const std::string& name, const std::string& from, const std::string& to) const {
    auto shown = dsgd({"platforms", "show", "m40-cluster"});
    EXPECT_EQ(shown.code, 0) << shown.err;
    const auto at = shown.out.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) shown.out.replace(at, from.size(), to);
    write_file_atomically(dir_ / name, shown.out);
    return dir_ / name;
  }
};

// Item 1: results never replace a FIFO, a symlink, a device or a folder, and an unwritable path fails before the
// work is done.
TEST_F(AppHostileInput, ResultsNeverReplaceWhatIsNotARegularFile) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  expect_input_error(dsgd(simulate_to(fifo.string())), fifo.string() + ": is a FIFO");
  EXPECT_TRUE(fs::is_fifo(fifo));

  const fs::path target = dir_ / "target.txt";
  write_file_atomically(target, "keep me\n");
  const fs::path link = dir_ / "link.json";
  fs::create_symlink(target, link);
  expect_input_error(dsgd(simulate_to(link.string())), link.string() + ": is a symbolic link");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_text_file(target), "keep me\n");

  expect_input_error(dsgd(simulate_to("/dev/null")), "/dev/null: is a character device");
  expect_input_error(dsgd(simulate_to(dir_.string())), ": is a folder");

  // Under a regular file nothing can be created: refused at parse time, so nothing ran (no "simulate:" header).
  const auto under_file = dsgd(simulate_to((target / "results.json").string()));
  expect_input_error(under_file, "cannot write here: " + target.string() + " is not a folder");
  EXPECT_FALSE(contains(under_file.err, "sync-sgd, lenet")) << under_file.err;

  // A regular file is replaced, as always.
  const fs::path results = dir_ / "results.json";
  write_file_atomically(results, "old\n");
  EXPECT_EQ(dsgd(simulate_to(results.string())).code, 0);
  EXPECT_NE(read_text_file(results), "old\n");
}

// Items 5, 6 and 12: hostile platform files.
TEST_F(AppHostileInput, HostilePlatformFilesAreInputErrors) {
  const fs::path deep = dir_ / "deep.json";
  write_file_atomically(deep, "{\"schema\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  expect_input_error(dsgd({"platforms", "show", deep.string()}), "JSON nested deeper than 256 levels");

  expect_input_error(dsgd({"platforms", "show", edited_platform("big.json", "0.7e-6", "1e400").string()}),
                     "JSON number out of range: 1e400");
  expect_input_error(
      dsgd({"platforms", "show", edited_platform("dup.json", "\"count\": 4", "\"count\": 4, \"count\": 8").string()}),
      "JSON object names 'count' twice");
  expect_input_error(dsgd({"platforms", "show", edited_platform("slow.json", "0.7e-6", "1e308").string()}),
                     "/latency_s: expected a latency in seconds, at most 1 s, got 1e+308 s");
  const fs::path folder = dir_ / "folder.json";
  fs::create_directories(folder);
  expect_input_error(dsgd({"platforms", "show", folder.string()}), folder.string() + ": is a folder, not a file");
}

// Item 4 and 12: LIBSVM indices beyond liblinear's int, dense spaces beyond memory, binary bytes in messages.
TEST_F(AppHostileInput, HostileLibsvmFilesAreInputErrors) {
  const auto study = [&](const fs::path& file) {
    return dsgd({"shared-memory", "--datasets", "libsvm:" + file.string(), "--threads", "1"});
  };
  write_file_atomically(dir_ / "int.svm", "1 1:0.5 2147483648:1\n-1 2:1\n");
  expect_input_error(study(dir_ / "int.svm"), "int.svm:1: feature index 2147483648 is beyond the 2147483647");
  write_file_atomically(dir_ / "dense.svm", "1 1:0.5 1000000000:1\n-1 2:1\n");
  expect_input_error(study(dir_ / "dense.svm"), "1000000000 features: its dense models need an estimated 80 GB");
  write_file_atomically(dir_ / "binary.svm", "1 \x01\xff\x1b[2J:1\n");
  const auto binary = study(dir_ / "binary.svm");
  expect_input_error(binary, "feature index '\\x01\\xff\\x1b[2J' is not a positive integer");
  EXPECT_FALSE(contains(binary.err, "\x1b")) << binary.err;
}

// Item 7: a failed report changes nothing, neither in a new folder nor over an existing report.
TEST_F(AppHostileInput, AFailedReportLeavesNothingHalfWritten) {
  const fs::path results = dir_ / "results";
  fs::create_directories(results);
  // The first experiment's results exist, the second's do not: rendering fails halfway.
  ASSERT_EQ(dsgd({"models", "--results", (results / "models.json").string()}).code, 0);
  const std::string manifest = R"({"name": "t", "title": "t", "experiments": [
    {"id": "models", "title": "Models", "description": "d", "command": ["models", "--results", "{results}"],
     "tables": [{"id": "zoo", "title": "Zoo", "columns": [{"header": "model", "field": "name"}]}]},
    {"id": "platforms", "title": "Platforms", "description": "d", "command": ["platforms", "--results", "{results}"],
     "tables": [{"id": "catalog", "title": "Catalog", "columns": [{"header": "platform", "field": "name"}]}]}]})";
  write_file_atomically(dir_ / "manifest.json", manifest);
  const fs::path fresh = dir_ / "fresh-report";
  const auto failed = dsgd({"report", "--manifest", (dir_ / "manifest.json").string(), "--results", results.string(),
                            "--out", fresh.string()});
  expect_input_error(failed, "missing results file for experiment 'platforms'");
  EXPECT_FALSE(fs::exists(fresh));

  // Over an existing report: index.md and the tables stay as they were.
  const fs::path existing = dir_ / "report";
  mark_as_owned(existing);  // a report dsgd wrote
  write_file_atomically(existing / "index.md", "old index\n");
  write_file_atomically(existing / "tables" / "models-zoo.md", "old table\n");
  expect_input_error(dsgd({"report", "--manifest", (dir_ / "manifest.json").string(), "--results", results.string(),
                           "--out", existing.string()}),
                     "missing results file");
  EXPECT_EQ(read_text_file(existing / "index.md"), "old index\n");
  EXPECT_EQ(read_text_file(existing / "tables" / "models-zoo.md"), "old table\n");
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find("rendering"), std::string::npos) << entry.path();
  }
}

// Issue 42 item 4: `dsgd reproduce --out mypaper` over the user's draft.tex and data/x.csv deleted both, exit 0.
// A folder dsgd did not write is refused before any work, and left as it was.
TEST_F(AppHostileInput, ReproduceNeverReplacesAFolderItDidNotWrite) {
  const fs::path paper = dir_ / "mypaper";
  write_file_atomically(paper / "draft.tex", "my draft\n");
  write_file_atomically(paper / "data" / "x.csv", "1,2\n");
  expect_input_error(dsgd({"reproduce", "--out", paper.string(), "--only", "models"}),
                     "holds files dsgd did not write");
  EXPECT_EQ(read_text_file(paper / "draft.tex"), "my draft\n");
  EXPECT_EQ(read_text_file(paper / "data" / "x.csv"), "1,2\n");
  // Nor is the folder it would keep the previous report in: refused before the experiments run.
  const fs::path out = dir_ / "out";
  write_file_atomically(dir_ / "out.previous" / "notes.txt", "mine\n");
  expect_input_error(dsgd({"reproduce", "--out", out.string(), "--only", "models"}), "out.previous: holds files");
  EXPECT_EQ(read_text_file(dir_ / "out.previous" / "notes.txt"), "mine\n");
  EXPECT_FALSE(fs::exists(out));
  // An empty folder is taken, and is dsgd's from then on: the next runs replace it, keeping the previous.
  fs::create_directories(dir_ / "empty");
  for (int run = 0; run < 3; ++run) {
    const auto outcome = dsgd({"reproduce", "--out", (dir_ / "empty").string(), "--only", "models"});
    ASSERT_EQ(outcome.code, 0) << run << ": " << outcome.err;
  }
  EXPECT_TRUE(is_owned(dir_ / "empty"));
  EXPECT_TRUE(is_owned(dir_ / "empty.previous"));
}

// The report a rerun replaces is kept as OUT.previous (an older one of dsgd's is replaced), never removed.
TEST_F(AppHostileInput, ReproduceKeepsThePreviousReport) {
  const fs::path out = dir_ / "r";
  for (int run = 0; run < 3; ++run) {
    // What the user may have added to the last report.
    if (run > 0) write_file_atomically(out / "run.txt", std::to_string(run - 1) + "\n");
    ASSERT_EQ(dsgd({"reproduce", "--out", out.string(), "--only", "models"}).code, 0) << run;
  }
  EXPECT_FALSE(fs::exists(out / "run.txt")) << "the last run's report is new";
  EXPECT_EQ(read_text_file(previous_of(out) / "run.txt"), "1\n");
  EXPECT_TRUE(fs::exists(previous_of(out) / "index.md"));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "r" || name == "r.previous") << name;
  }
}

// `dsgd report --results proj/tables --out proj` deleted the results it was reading and the notes beside them.
TEST_F(AppHostileInput, ReportNeverDeletesTheResultsItReads) {
  const fs::path project = dir_ / "proj";
  ASSERT_EQ(dsgd({"models", "--results", (project / "tables" / "models.json").string()}).code, 0);
  write_file_atomically(project / "notes.md", "my notes\n");
  const auto report = [&](const fs::path& results, const fs::path& out) {
    return dsgd({"report", "--results", results.string(), "--out", out.string()});
  };
  expect_input_error(report(project / "tables", project), "holds files dsgd did not write");
  EXPECT_EQ(read_text_file(project / "notes.md"), "my notes\n");
  EXPECT_TRUE(fs::exists(project / "tables" / "models.json"));
  // Into a report folder of dsgd's, results read from the tables/ it replaces are refused too.
  const fs::path own = dir_ / "own";
  mark_as_owned(own);
  ASSERT_EQ(dsgd({"models", "--results", (own / "tables" / "models.json").string()}).code, 0);
  expect_input_error(report(own / "tables", own), "which the report replaces");
  EXPECT_TRUE(fs::exists(own / "tables" / "models.json"));
}

// SIGTERM or SIGHUP before it could clean up left OUT.staging-PID behind forever: the next run removes the staging
// folders of processes that are gone, where dsgd marked them as its own, and no other.
TEST_F(AppHostileInput, StaleStagingFoldersOfDeadRunsAreRemoved) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // a pid that is gone
  const fs::path out = dir_ / "r";
  const fs::path stale = dir_ / ("r.staging-" + std::to_string(child));
  mark_as_owned(stale);
  write_file_atomically(stale / "results" / "models.json", "{}\n");
  const fs::path unmarked = dir_ / ("r.staging-" + std::to_string(child + 1000000));
  write_file_atomically(unmarked / "mine.txt", "mine\n");
  ASSERT_EQ(dsgd({"reproduce", "--out", out.string(), "--only", "models"}).code, 0);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(read_text_file(unmarked / "mine.txt"), "mine\n") << "not dsgd's: kept";
}

// Issue 42 item 5: `--checkpoint same.json --results same.json` let the results overwrite the checkpoint, and the
// resume then failed. The same file under two spellings is refused before any work.
TEST_F(AppHostileInput, TwoOutputsNamingOneFileAreRefused) {
  fs::create_directories(dir_ / "sub");
  const std::string same = (dir_ / "same.json").string();
  const std::string spelled = (dir_ / "sub" / ".." / "same.json").string();
  for (const char* command : {"run", "train"}) {
    expect_input_error(dsgd({command, "--checkpoint", same, "--results", spelled, "--iterations", "1"}),
                       "--checkpoint and --results name the same file");
  }
  EXPECT_FALSE(fs::exists(same));
}

// Items 8 and 10: budgets and batches a run cannot honour.
TEST_F(AppHostileInput, ImpossibleBudgetsAndBatchesAreRefused) {
  dsgd::testing::write_synthetic_idx_folder(dir_, 160, 50);
  const std::string data = "idx:" + dir_.string();
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", "--data", data, "--workers", "2", "--model", "lenet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return dsgd(args);
  };
  expect_input_error(run({"--iterations", "0"}), "--iterations");
  expect_input_error(run({"--iterations", "-1"}), "--iterations");
  expect_input_error(run({"--seconds", "-1"}), "--seconds");
  expect_input_error(dsgd({"train", "--data", data, "--iterations", "-1"}), "--iterations");
  // Beyond the memory limit: refused with the estimate, before anything is allocated.
  expect_input_error(run({"--iterations", "1", "--batch", "100000", "--memory-limit", "1GB"}),
                     "run: 2 workers of lenet with batch 100000 (threads): an estimated ");
  expect_input_error(
      dsgd({"train", "--data", data, "--iterations", "1", "--batch", "1000000", "--memory-limit", "1GB"}),
      "train: lenet with batch 1000000: an estimated ");
  // Within memory but beyond the data set.
  expect_input_error(run({"--iterations", "1", "--batch", "1000"}),
                     "--batch 1000 is more than the 160 training images");
  expect_input_error(dsgd({"train", "--data", data, "--iterations", "1", "--batch", "1000"}),
                     "--batch 1000 is more than the 160 training images");
}

// The real dsgd with `arguments` under an address-space limit of 1.5 GB (ulimit -v): a refusal must come from
// dsgd's estimates, not from a library that ran out (below about 1 GB OpenBLAS's start-up spins before main).
dsgd::ProcessResult dsgd_in_1500_mb(const std::string& arguments) {
  const std::string command = "ulimit -v 1500000; exec " + std::string(DSGD_BINARY_DIR) + "/app/dsgd " + arguments;
  return run_process({"sh", "-c", command}, std::chrono::seconds(120));
}

#if defined(__SANITIZE_ADDRESS__)
#define DSGD_SKIP_UNDER_ULIMIT()                                                                                      \
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of shadow address space: no ASan program starts under ulimit " \
                  "-v"
#else
#define DSGD_SKIP_UNDER_ULIMIT() static_cast<void>(0)
#endif

// Item 3: under an address-space limit (ulimit -v) a world that would not fit is refused up front, in the real
// executable, rather than dying in a library (std::terminate, a segfault in oneDNN) halfway through.
TEST_F(AppHostileInput, AnAddressSpaceLimitBoundsTheWorld) {
  DSGD_SKIP_UNDER_ULIMIT();
  dsgd::testing::write_synthetic_idx_folder(dir_, 160, 50);
  const auto result = dsgd_in_1500_mb("run --workers 64 --iterations 1 --data idx:" + dir_.string());
  EXPECT_EQ(result.exit_code, kExitUsage) << result.output;
  EXPECT_TRUE(contains(result.output, "run: 64 workers of lenet with batch 64 (threads): an estimated 1.99 GB"))
      << result.output;
}

// Issue 42 item 7: a small gzip LIBSVM file that inflates a thousandfold is parsed as it inflates and refused at the
// line where it outgrows memory (it ended in "unexpected error: std::bad_alloc", exit 3).
TEST_F(AppHostileInput, AGzipLibsvmBombIsRefusedAsItInflates) {
  DSGD_SKIP_UNDER_ULIMIT();
  std::string block;
  while (block.size() < (std::size_t{10} << 20)) {
    block += "0.5";
    for (int feature = 1; feature <= 200; ++feature) block += " " + std::to_string(feature) + ":1";
    block += '\n';
  }
  const auto member = data::gzip_bytes(std::span(reinterpret_cast<const std::uint8_t*>(block.data()), block.size()));
  std::vector<std::uint8_t> bomb;
  for (int copy = 0; copy < 60; ++copy) bomb.insert(bomb.end(), member.begin(), member.end());  // 600 MB inflated
  ASSERT_LT(bomb.size(), std::size_t{8} << 20);
  data::write_binary_file(dir_ / "bomb.svm.gz", bomb);
  const auto result = dsgd_in_1500_mb("lasso --problem libsvm:" + (dir_ / "bomb.svm.gz").string());
  EXPECT_EQ(result.exit_code, kExitUsage) << result.output;
  EXPECT_TRUE(contains(result.output, "dsgd: " + (dir_ / "bomb.svm.gz").string() + ":")) << result.output;
  EXPECT_TRUE(contains(result.output, ": reading on needs another ")) << result.output;
  EXPECT_FALSE(contains(result.output, "unexpected")) << result.output;
}

// Issue 42 item 7, issue 46: ten million ranks at the analytic level run in 1.5 GB (they took 6.2 GB and 54 s
// before their first error, then were refused); half a billion are estimated before they are placed.
TEST_F(AppHostileInput, TenMillionAnalyticRanksRunAndHalfABillionAreEstimatedFirst) {
  DSGD_SKIP_UNDER_ULIMIT();
  const auto shown = dsgd({"platforms", "show", "knl-aries-1m"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  // knl-aries-1m with `nodes` nodes in `groups` groups.
  const auto scaled = [&](const char* name, const char* nodes, const char* groups) {
    std::string text = shown.out;
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"\"count\": 15360,", "\"count\": " + std::string(nodes) + ","},
          std::pair<std::string, std::string>{"\"groups\": 40,", "\"groups\": " + std::string(groups) + ","}}) {
      const auto at = text.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) text.replace(at, from.size(), to);
    }
    write_file_atomically(dir_ / name, text);
    return (dir_ / name).string();
  };
  const auto ten_million = dsgd_in_1500_mb(
      "simulate --algo sync-sgd --workers 10000000 --iterations 1 --fidelity "
      "analytic --platform " +
      scaled("knl-10m.json", "153600", "400"));
  EXPECT_EQ(ten_million.exit_code, 0) << ten_million.output;
  EXPECT_TRUE(contains(ten_million.output, "analytic")) << ten_million.output;
  const auto half_a_billion =
      dsgd_in_1500_mb("simulate --algo sync-sgd --workers 500000000 --iterations 1 --fidelity analytic --platform " +
                      scaled("knl-500m.json", "7680000", "20000"));
  EXPECT_EQ(half_a_billion.exit_code, kExitUsage) << half_a_billion.output;
  EXPECT_TRUE(contains(half_a_billion.output, "dsgd: analytic level: 500000000 ranks need an estimated "))
      << half_a_billion.output;
}

// Issue 42 item 7: a 1 GB file given as a platform or a checkpoint is refused by its size or its header before it
// is read (it was read whole first: 2.3-4.4 GB, and std::bad_alloc under a limit).
TEST_F(AppHostileInput, HugeInputFilesAreRefusedBeforeTheyAreRead) {
  DSGD_SKIP_UNDER_ULIMIT();
  const fs::path platform = dir_ / "huge-platform.json";
  std::ofstream(platform) << "{";
  fs::resize_file(platform, std::uintmax_t{1} << 30);  // sparse: no disk used
  auto result = dsgd_in_1500_mb("simulate --algo sync-sgd --workers 2 --iterations 1 --platform " + platform.string());
  EXPECT_EQ(result.exit_code, kExitUsage) << result.output;
  EXPECT_TRUE(contains(result.output, platform.string() + ": holds 1.07 GB; dsgd reads at most 268 MB"))
      << result.output;

  const fs::path checkpoint = dir_ / "huge-checkpoint";
  {
    std::ofstream out(checkpoint, std::ios::binary);
    const std::uint32_t version = kCheckpointFormatVersion;
    const std::uint64_t payload_bytes = 16;
    out << "DSGDCKPT";
    out.write(reinterpret_cast<const char*>(&version), sizeof version);
    out.write(reinterpret_cast<const char*>(&payload_bytes), sizeof payload_bytes);
  }
  fs::resize_file(checkpoint, std::uintmax_t{1} << 30);
  dsgd::testing::write_synthetic_idx_folder(dir_ / "data", 160, 50);
  result = dsgd_in_1500_mb("run --workers 2 --iterations 1 --eval-every 1 --data idx:" + (dir_ / "data").string() +
                           " --resume --checkpoint " + checkpoint.string());
  EXPECT_EQ(result.exit_code, kExitUsage) << result.output;
  EXPECT_TRUE(contains(result.output, "checkpoint " + checkpoint.string() +
                                          ": has bytes after its end: 1073741824 bytes where the header promises 40"))
      << result.output;
}

// Item 11: sizes the lost-updates experiment cannot hold.
TEST_F(AppHostileInput, LostUpdatesRefusesImpossibleSizes) {
  expect_input_error(dsgd({"lost-updates", "--floats", "-4"}), "--floats");
  expect_input_error(dsgd({"lost-updates", "--floats", "100000000000", "--threads", "1"}),
                     "a vector of 100000000000 floats needs 400 GB");
  expect_input_error(dsgd({"lost-updates", "--threads", "100000", "--floats", "16"}), "at most 4096 threads");
}

}  // namespace
}  // namespace dsgd::app
