// The transformer commands: `dsgd train-gpt` trains the byte-level GPT natively with tp x pp x dp threads and
// writes its loss curve; `dsgd simulate --model <transformer>` predicts an iteration and refuses what does not fit;
// `dsgd models show` lists a transformer block by block.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app/cli.hpp"
#include "core/atomic_file.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

namespace fs = std::filesystem;
using dsgd::testing::contains;

class AppTransformers : public dsgd::testing::CliScratchTest {
 protected:
  // A small text corpus: a few kilobytes of repeated sentences.
  std::string corpus() {
    const auto path = dir_ / "corpus.txt";
    std::ofstream out(path);
    for (int i = 0; i < 200; ++i) out << "the quick brown fox jumps over the lazy dog " << i % 7 << ".\n";
    return path.string();
  }
};

TEST_F(AppTransformers, TrainGptWritesItsLossCurve) {
  const auto results = (dir_ / "gpt.json").string();
  const auto outcome = dsgd({"train-gpt", "--corpus", corpus(), "--tp", "2", "--pp", "2", "--dp", "2", "--micro-batch",
                             "2", "--micro-batches", "2", "--iterations", "6", "--results", results});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "tp 2 x pp 2 x dp 2 = 8 threads")) << outcome.err;
  const auto document = reports::read_results(results);
  ASSERT_EQ(document.benchmarks.size(), 1U);
  const auto& entry = document.benchmarks.front();
  EXPECT_EQ(entry.executor, "threads");
  EXPECT_EQ(entry.ranks, 8);
  ASSERT_EQ(entry.curves.size(), 1U);
  EXPECT_EQ(entry.curves.front().points.size(), 6U);
  EXPECT_LT(entry.counters.at("final_loss"), entry.counters.at("first_loss"));
}

// The same run in SimGrid: the same losses bit for bit, in simulated time on the platform's GPUs.
TEST_F(AppTransformers, TrainGptInSimgridGivesTheThreadsLosses) {
  const auto text = corpus();
  std::vector<reports::Entry> entries;
  for (const char* executor : {"threads", "simgrid"}) {
    const auto results = (dir_ / (std::string(executor) + ".json")).string();
    const auto outcome = dsgd({"train-gpt", "--corpus", text, "--micro-batch", "2", "--micro-batches", "2",
                               "--iterations", "4", "--executor", executor, "--results", results});
    ASSERT_EQ(outcome.code, 0) << outcome.err;
    entries.push_back(reports::read_results(results).benchmarks.front());
  }
  EXPECT_EQ(entries[1].executor, "simgrid");
  EXPECT_EQ(entries[0].curves.front().points.size(), entries[1].curves.front().points.size());
  for (std::size_t i = 0; i < entries[0].curves.front().points.size(); ++i) {
    EXPECT_EQ(entries[0].curves.front().points[i].second, entries[1].curves.front().points[i].second) << i;
  }
}

TEST_F(AppTransformers, TrainGptRefusesAMissingCorpusAndABadGrid) {
  auto outcome = dsgd({"train-gpt", "--corpus", (dir_ / "none.txt").string()});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "none.txt: no such file or directory")) << outcome.err;
  outcome = dsgd({"train-gpt", "--corpus", corpus(), "--pp", "3", "--iterations", "1"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "4 layers do not split into 3 equal pipeline chunks")) << outcome.err;
}

TEST_F(AppTransformers, SimulateRefusesAStageThatDoesNotFitItsGpu) {
  const auto outcome = dsgd({"simulate", "--model", "gpt-145.6b", "--tp", "1", "--pp", "8", "--global-batch", "64"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "pipeline stage 0 needs")) << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "NVIDIA A100 SXM4 80GB has 80.0 GiB")) << outcome.err;
}

TEST_F(AppTransformers, SimulatePrintsAnIterationAndModelsShowsTheBlocks) {
  auto outcome = dsgd({"simulate", "--model", "gpt-39.1b", "--tp", "8", "--pp", "2", "--dp", "32", "--micro-batch", "4",
                       "--global-batch", "1536"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "TFLOP/s per GPU")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "bubble 8.2%")) << outcome.out;
  outcome = dsgd({"models", "show", "llama2-7b"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "block 31 (rmsnorm, swiglu)")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "mlp.gate_up")) << outcome.out;
}

}  // namespace
}  // namespace dsgd::app
