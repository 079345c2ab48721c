// `dsgd run --checkpoint` and `dsgd train --checkpoint` as a user runs them (docs/checkpoint.md). The real dsgd
// process, started in its own process group, is sent SIGINT (as Ctrl-C sends it to the terminal's foreground group)
// once its checkpoint has reached iteration 20; resumed from that checkpoint it ends with the same weights hash and
// accuracy history as an uninterrupted run -- sync-sgd on threads and on MPI (dsgd-mpi under real mpirun). A
// corrupt, truncated or mismatched checkpoint is refused before any training, exit 2 and one line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "app/cli.hpp"
#include "core/checkpoint.hpp"
#include "core/subprocess.hpp"
#include "reports/results.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using dsgd::testing::contains;

const std::string kDsgd = std::string(DSGD_BINARY_DIR) + "/app/dsgd";

// The checkpoint's iteration, or -1 while there is none (a complete file replaces the last one atomically).
std::int64_t iteration_of(const fs::path& file) {
  if (!fs::exists(file)) return -1;
  return read_checkpoint(file).iteration;
}

// Waits up to `limit` for process `pid` to end; its status, or nullopt.
std::optional<int> wait_for(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

class AppCheckpoint : public dsgd::testing::CliScratchTest {
 protected:
  void SetUp() override {
    CliScratchTest::SetUp();
    dsgd::testing::write_synthetic_idx_folder(dir_, 480, 100);
    common_ = {"--workers",
               "2",
               "--data",
               "idx:" + dir_.string(),
               "--batch",
               "16",
               "--eval-every",
               "10",
               "--test-images",
               "100",
               "--target-accuracy",
               "0"};
  }

  // `dsgd run` with `more` arguments as a program; its results entry.
  reports::Entry run(const std::vector<std::string>& more, const std::string& name) {
    std::vector<std::string> command = {kDsgd, "run"};
    command.insert(command.end(), common_.begin(), common_.end());
    command.insert(command.end(), more.begin(), more.end());
    const auto results = dir_ / (name + ".json");
    command.insert(command.end(), {"--results", results.string()});
    const auto outcome = run_process(command, std::chrono::seconds(240));
    EXPECT_EQ(outcome.exit_code, 0) << name << ": " << outcome.output;
    if (outcome.exit_code != 0) return {};
    return reports::read_results(results).benchmarks.at(0);
  }

  // Starts `dsgd run` with `more` arguments as the leader of a new process group, its output into `log`.
  pid_t start(const std::vector<std::string>& more, const fs::path& log) {
    std::vector<std::string> words = {kDsgd, "run"};
    words.insert(words.end(), common_.begin(), common_.end());
    words.insert(words.end(), more.begin(), more.end());
    std::vector<char*> argv;
    for (auto& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      // As a terminal's foreground job: SIGINT acts (a shell ignores it in the jobs it starts in the background, and
      // a child inherits that).
      ::signal(SIGINT, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int in = ::open("/dev/null", O_RDONLY);
      if (out >= 0) {
        ::dup2(out, 1);
        ::dup2(out, 2);
      }
      if (in >= 0) ::dup2(in, 0);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // either side may run first
    return pid;
  }

  // Runs `executor` until its checkpoint reaches iteration 20, interrupts it with SIGINT, resumes it from the
  // checkpoint to 20 iterations past where it stopped, and compares with an uninterrupted run of as many.
  void interrupt_and_resume(const std::string& executor) {
    const auto file = dir_ / "run.ckpt";
    const auto log = dir_ / "interrupted.log";
    const pid_t pid = start({"--executor", executor, "--iterations", "1000000", "--checkpoint", file.string()}, log);
    ASSERT_GT(pid, 0);
    const auto slurp = [&] {
      std::ifstream in(log);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const auto deadline = Clock::now() + std::chrono::seconds(180);
    bool ended_early = false;
    while (iteration_of(file) < 20 && Clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        ended_early = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!ended_early) ::kill(-pid, SIGINT);
    const auto status = ended_early ? std::optional<int>(0) : wait_for(pid, std::chrono::seconds(60));
    // Whatever dsgd does on SIGINT, nothing of its group may go on writing the checkpoint.
    const auto group_deadline = Clock::now() + std::chrono::seconds(30);
    while (::kill(-pid, 0) == 0 && Clock::now() < group_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(-pid, SIGKILL);
    if (!status) ::waitpid(pid, nullptr, 0);
    ASSERT_FALSE(ended_early) << "the run ended before it was interrupted: " << slurp();
    ASSERT_TRUE(status.has_value()) << "dsgd did not exit within 60 s of SIGINT: " << slurp();
    // The file is a complete checkpoint (read_checkpoint checks its length and CRC-32).
    const std::int64_t stopped = iteration_of(file);
    ASSERT_GE(stopped, 20) << slurp();
    ASSERT_LT(stopped, 1000000);
    const std::string total = std::to_string(stopped + 20);

    const auto resumed =
        run({"--executor", executor, "--iterations", total, "--checkpoint", file.string(), "--resume"}, "resumed");
    const auto straight = run({"--executor", executor, "--iterations", total}, "straight");
    ASSERT_FALSE(straight.labels.empty());
    ASSERT_FALSE(resumed.labels.empty());
    EXPECT_EQ(resumed.iterations, stopped + 20);
    EXPECT_EQ(resumed.labels.at("parameters_fnv1a"), straight.labels.at("parameters_fnv1a")) << executor;
    // The accuracy after every evaluation, the interrupted run's included.
    const auto& by_iteration = [](const reports::Entry& entry) { return entry.curves.at(1).points; };
    EXPECT_EQ(by_iteration(resumed), by_iteration(straight)) << executor;
    EXPECT_EQ(iteration_of(file), stopped + 20);
  }

  std::vector<std::string> common_;
};

TEST_F(AppCheckpoint, SigintThenResumeOnThreadsEndsWithTheUninterruptedWeights) { interrupt_and_resume("threads"); }

TEST_F(AppCheckpoint, SigintThenResumeOnMpiEndsWithTheUninterruptedWeights) { interrupt_and_resume("mpi"); }

TEST_F(AppCheckpoint, DamagedOrMismatchedCheckpointsAreRefusedBeforeTraining) {
  const auto file = dir_ / "run.ckpt";
  auto args = std::vector<std::string>{"run"};
  args.insert(args.end(), common_.begin(), common_.end());
  args.insert(args.end(), {"--iterations", "10", "--checkpoint", file.string()});
  ASSERT_EQ(dsgd(args).code, 0);
  std::ifstream in(file, std::ios::binary);
  const std::string good{std::istreambuf_iterator<char>(in), {}};
  in.close();
  const auto resume = [&](const std::vector<std::string>& more) {
    auto resumed = args;
    resumed[resumed.size() - 3] = "20";  // --iterations
    resumed.emplace_back("--resume");
    resumed.insert(resumed.end(), more.begin(), more.end());
    return dsgd(resumed);
  };
  const auto expect_refused = [&](const dsgd::testing::CliOutcome& outcome, const std::string& what) {
    EXPECT_EQ(outcome.code, kExitUsage) << outcome.err;
    EXPECT_TRUE(contains(outcome.err, "checkpoint " + file.string())) << outcome.err;
    EXPECT_TRUE(contains(outcome.err, what)) << outcome.err;
    EXPECT_FALSE(contains(outcome.err, "iteration     ")) << "no training: " << outcome.err;
  };
  std::ofstream(file, std::ios::binary | std::ios::trunc) << good.substr(0, good.size() - 100);
  expect_refused(resume({}), "truncated");
  std::string corrupt = good;
  corrupt[corrupt.size() / 2] ^= 1;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << corrupt;
  expect_refused(resume({}), "checksum mismatch");
  expect_refused(resume({"--executor", "mpi"}), "checksum mismatch");
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "not a checkpoint";
  expect_refused(resume({}), "not a dsgd checkpoint");
  std::ofstream(file, std::ios::binary | std::ios::trunc) << good;
  expect_refused(resume({"--seed", "2"}), "does not match this run: seed is 1 there, 2 here");
  // A missing file with --resume is a fresh start, said on stderr.
  fs::remove(file);
  const auto fresh = resume({});
  EXPECT_EQ(fresh.code, 0) << fresh.err;
  EXPECT_TRUE(contains(fresh.err, "does not exist yet; starting from iteration 0")) << fresh.err;
  // Asynchronous algorithms and the simulator take no checkpoints.
  auto async = args;
  async.insert(async.end(), {"--algo", "hogwild-sgd"});
  const auto refused = dsgd(async);
  EXPECT_EQ(refused.code, kExitUsage);
  EXPECT_TRUE(contains(refused.err, "hogwild-sgd is asynchronous")) << refused.err;
}

// `dsgd train`: stopped at 20 iterations with a checkpoint and resumed to 40, the same weights as 40 straight.
TEST_F(AppCheckpoint, TrainResumesBitIdentically) {
  const auto file = dir_ / "train.ckpt";
  const std::vector<std::string> train = {"train",     "--data", "idx:" + dir_.string(), "--batch", "16",
                                          "--threads", "1",      "--eval-every",         "10",      "--target-accuracy",
                                          "0"};
  const auto hash = [&](const std::vector<std::string>& more, const std::string& name) {
    auto args = train;
    args.insert(args.end(), more.begin(), more.end());
    const auto results = dir_ / (name + ".json");
    args.insert(args.end(), {"--results", results.string()});
    const auto outcome = dsgd(args);
    EXPECT_EQ(outcome.code, 0) << outcome.err;
    if (outcome.code != 0) return std::string();
    const auto entry = reports::read_results(results).benchmarks.at(0);
    return entry.labels.at("parameters_fnv1a") + " " + std::to_string(entry.curves.at(1).points.size());
  };
  const std::string straight = hash({"--iterations", "40"}, "straight");
  hash({"--iterations", "20", "--checkpoint", file.string()}, "first");
  EXPECT_EQ(read_checkpoint(file).iteration, 20);
  EXPECT_EQ(hash({"--iterations", "40", "--checkpoint", file.string(), "--resume"}, "resumed"), straight);
  auto other = train;
  other.insert(other.end(), {"--iterations", "60", "--checkpoint", file.string(), "--resume", "--momentum", "0.5"});
  const auto refused = dsgd(other);
  EXPECT_EQ(refused.code, kExitUsage);
  EXPECT_TRUE(contains(refused.err, "momentum is 0.899999976 there, 0.5 here")) << refused.err;
}

}  // namespace
}  // namespace dsgd::app
