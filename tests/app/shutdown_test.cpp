// The dsgd executable stopped from outside, as a user or a batch system stops it (docs/errors.md "Interrupts"):
// SIGINT / SIGTERM to a run on MPI (mpirun and every rank must be gone, exit 128 + signal) and on threads (the
// results so far written, marked interrupted), a rank killed by SIGKILL (the error names the rank and the signal),
// and a run past its --wall-timeout (the error names the option). Processes are found by scanning /proc.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/mpi_worker.hpp"
#include "core/interrupt.hpp"
#include "reports/results.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Dsgd::wait's status of a process a signal ended (unlike one that exited with 128 + signal itself).
constexpr int kKilledBy = 1000;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// One process of /proc: enough to follow the tree and to tell a reused pid from the original.
struct Process {
  int pid = 0;
  int parent = 0;
  std::string name;
  char state = 0;
  std::string start_ticks;  // field 22: the same pid with another start time is another process
};

std::map<int, Process> processes() {
  std::map<int, Process> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    Process process;
    process.pid = std::stoi(pid);
    process.name = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 1));
    std::vector<std::string> fields;
    for (std::string field; rest >> field;) fields.push_back(field);
    if (fields.size() < 20) continue;
    process.state = fields[0][0];
    process.parent = std::stoi(fields[1]);
    process.start_ticks = fields[19];
    found[process.pid] = process;
  }
  return found;
}

// Every living descendant of `root` (children, their children, ...), not zombies.
std::vector<Process> descendants(int root) {
  const auto all = processes();
  std::vector<Process> found;
  std::vector<int> frontier{root};
  while (!frontier.empty()) {
    const int parent = frontier.back();
    frontier.pop_back();
    for (const auto& [pid, process] : all) {
      if (process.parent != parent) continue;
      frontier.push_back(pid);
      if (process.state != 'Z') found.push_back(process);
    }
  }
  return found;
}

// Those of `recorded` that still run (same pid and start time, not a zombie).
std::vector<Process> still_running(const std::vector<Process>& recorded) {
  const auto all = processes();
  std::vector<Process> left;
  for (const auto& process : recorded) {
    const auto now = all.find(process.pid);
    if (now != all.end() && now->second.start_ticks == process.start_ticks && now->second.state != 'Z') {
      left.push_back(process);
    }
  }
  return left;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The dsgd executable started in the background, its output in a file; killed (with whatever it left) at the end.
class Dsgd {
 public:
  Dsgd(const std::vector<std::string>& args, const fs::path& output) : output_(output) {
    std::vector<std::string> argv{std::string(DSGD_BINARY_DIR) + "/app/dsgd"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      std::vector<char*> pointers;
      for (auto& arg : argv) pointers.push_back(arg.data());
      pointers.push_back(nullptr);
      ::execv(pointers[0], pointers.data());
      ::_exit(127);
    }
  }
  ~Dsgd() {
    for (const auto& process : still_running(seen_)) ::kill(process.pid, SIGKILL);
    if (!exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  int pid() const { return pid_; }
  std::string output() const { return read_text(output_); }

  // Waits up to `limit` until `ready` holds for its descendants, remembering them; false if it never did.
  template <typename Ready>
  bool wait_for_descendants(Ready ready, std::chrono::seconds limit) {
    for (const auto deadline = Clock::now() + limit; Clock::now() < deadline;) {
      const auto found = descendants(pid_);
      for (const auto& process : found) {
        const auto known = std::find_if(seen_.begin(), seen_.end(), [&](const Process& seen) {
          return seen.pid == process.pid && seen.start_ticks == process.start_ticks;
        });
        // A process keeps its pid through exec but takes the new program's name: mpirun's child is "mpirun"
        // between its fork and its exec of dsgd-mpi, so the latest name is the one that counts.
        if (known == seen_.end()) {
          seen_.push_back(process);
        } else {
          known->name = process.name;
        }
      }
      if (ready(found)) return true;
      if (exited()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Waits up to `limit` until the output contains `text`.
  bool wait_for_output(const std::string& text, std::chrono::seconds limit) {
    for (const auto deadline = Clock::now() + limit; Clock::now() < deadline;) {
      if (contains(output(), text)) return true;
      if (exited()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // The exit status after waiting up to `limit`: the exit code, kKilledBy + signal if a signal ended it, -1 if it
  // still runs.
  int wait(std::chrono::seconds limit) {
    for (const auto deadline = Clock::now() + limit; Clock::now() < deadline;) {
      if (exited()) return code_;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

  // Every descendant seen so far.
  const std::vector<Process>& seen() const { return seen_; }

 private:
  bool exited() {
    if (exited_) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    exited_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : kKilledBy + WTERMSIG(status);
    return true;
  }

  fs::path output_;
  int pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
  std::vector<Process> seen_;
};

std::vector<Process> named(const std::vector<Process>& processes, const std::string& name) {
  std::vector<Process> found;
  for (const auto& process : processes) {
    if (process.name == name) found.push_back(process);
  }
  return found;
}

// The rank OpenMPI gave process `pid` (its environment's OMPI_COMM_WORLD_RANK), or -1.
int mpi_rank(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
  const std::string key = "OMPI_COMM_WORLD_RANK=";
  for (std::string entry; std::getline(in, entry, '\0');) {
    if (entry.rfind(key, 0) == 0) return std::stoi(entry.substr(key.size()));
  }
  return -1;
}

// Waits up to `limit` until none of `recorded` runs; what is left then.
std::vector<Process> left_after(const std::vector<Process>& recorded, std::chrono::seconds limit) {
  for (const auto deadline = Clock::now() + limit; Clock::now() < deadline;) {
    if (still_running(recorded).empty()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return still_running(recorded);
}

std::string names_of(const std::vector<Process>& processes) {
  std::string text;
  for (const auto& process : processes) text += process.name + " (" + std::to_string(process.pid) + ") ";
  return text;
}

class AppShutdown : public dsgd::testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    dsgd::testing::write_synthetic_idx_folder(dir_, 400, 40);
  }

  // A run of sync-sgd with `workers` on `executor` that would last far longer than any test, evaluating every
  // `eval_every` iterations, with `extra` options. MPI runs evaluate rarely: ranks that print nothing are not ended
  // by a closed pipe, so only dsgd's own stopping can end them.
  std::vector<std::string> long_run(const std::string& executor, int workers, const std::string& eval_every,
                                    const std::vector<std::string>& extra) {
    std::vector<std::string> args{"run",
                                  "--algo",
                                  "sync-sgd",
                                  "--workers",
                                  std::to_string(workers),
                                  "--executor",
                                  executor,
                                  "--data",
                                  "idx:" + dir_.string(),
                                  "--batch",
                                  "8",
                                  "--iterations",
                                  "1000000",
                                  "--eval-every",
                                  eval_every,
                                  "--target-accuracy",
                                  "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  static bool two_ranks(const std::vector<Process>& found) { return named(found, "dsgd-mpi").size() == 2; }
  static bool three_ranks(const std::vector<Process>& found) { return named(found, "dsgd-mpi").size() == 3; }

  // A long_run with --eval-every 10, interrupted: its results say so and end at a round.
  static void expect_stopped_at_a_round_boundary(const fs::path& results) {
    const auto written = reports::read_results(results);
    EXPECT_TRUE(written.interrupted);
    ASSERT_EQ(written.benchmarks.size(), 1U);
    const auto& entry = written.benchmarks.front();
    EXPECT_EQ(entry.labels.at("stop_reason"), "interrupted");
    EXPECT_GE(entry.iterations, 10);
    EXPECT_LT(entry.iterations, 1000000);
    EXPECT_EQ(entry.iterations % 10, 0) << "expectation: stopped at a round boundary (--eval-every 10)";
  }
};

TEST_F(AppShutdown, SigintToAnMpiRunStopsMpirunAndEveryRank) {
  Dsgd dsgd(long_run("mpi", 3, "100000", {}), dir_ / "output.txt");
  ASSERT_TRUE(dsgd.wait_for_descendants(three_ranks, std::chrono::seconds(90))) << dsgd.output();
  ASSERT_EQ(named(dsgd.seen(), "mpirun").size(), 1U) << names_of(dsgd.seen());
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the ranks at work
  ASSERT_EQ(::kill(dsgd.pid(), SIGINT), 0);
  EXPECT_EQ(dsgd.wait(std::chrono::seconds(30)), 128 + SIGINT) << dsgd.output();
  const auto left = left_after(dsgd.seen(), std::chrono::seconds(10));
  EXPECT_TRUE(left.empty()) << "still running after SIGINT to dsgd: " << names_of(left);
  EXPECT_TRUE(contains(dsgd.output(), "dsgd: interrupted by SIGINT; stopped mpirun and its 3 ranks")) << dsgd.output();
}

// SIGHUP (the terminal closed) is a request to stop like SIGTERM.
TEST_F(AppShutdown, SigtermOrSighupToAThreadsRunKeepsTheResultsMarkedInterrupted) {
  for (const int signal : {SIGTERM, SIGHUP}) {
    const auto results = dir_ / ("results-" + std::to_string(signal) + ".json");
    Dsgd dsgd(long_run("threads", 2, "10", {"--results", results.string()}),
              dir_ / ("output-" + std::to_string(signal) + ".txt"));
    // The first evaluation's progress line: training is under way.
    ASSERT_TRUE(dsgd.wait_for_output("  iteration", std::chrono::seconds(90))) << dsgd.output();
    ASSERT_EQ(::kill(dsgd.pid(), signal), 0);
    EXPECT_EQ(dsgd.wait(std::chrono::seconds(30)), 128 + signal) << dsgd.output();
    EXPECT_TRUE(contains(dsgd.output(), "dsgd: interrupted by " + signal_name(signal) + "; stopped training after"))
        << dsgd.output();
    ASSERT_TRUE(fs::exists(results)) << dsgd.output();
    expect_stopped_at_a_round_boundary(results);
  }
}

TEST_F(AppShutdown, ARankKilledBySigkillIsNamedWithItsSignal) {
  Dsgd dsgd(long_run("mpi", 3, "100000", {}), dir_ / "output.txt");
  ASSERT_TRUE(dsgd.wait_for_descendants(three_ranks, std::chrono::seconds(90))) << dsgd.output();
  int victim = -1;
  for (const auto& rank : named(dsgd.seen(), "dsgd-mpi")) {
    if (mpi_rank(rank.pid) == 2) victim = rank.pid;
  }
  ASSERT_GT(victim, 0) << "no dsgd-mpi process with OMPI_COMM_WORLD_RANK=2";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  EXPECT_EQ(dsgd.wait(std::chrono::seconds(60)), 1) << dsgd.output();
  EXPECT_TRUE(contains(dsgd.output(), "dsgd-mpi rank 2 was killed by SIGKILL")) << dsgd.output();
  const auto left = left_after(dsgd.seen(), std::chrono::seconds(10));
  EXPECT_TRUE(left.empty()) << "still running: " << names_of(left);
}

TEST_F(AppShutdown, AnMpiRunPastItsWallTimeoutNamesTheOption) {
  // Time enough for mpirun to start both ranks on a busy machine before the limit stops them.
  Dsgd dsgd(long_run("mpi", 2, "100000", {"--wall-timeout", "15"}), dir_ / "output.txt");
  ASSERT_TRUE(dsgd.wait_for_descendants(two_ranks, std::chrono::seconds(30))) << dsgd.output();
  EXPECT_EQ(dsgd.wait(std::chrono::seconds(60)), 1) << dsgd.output();
  EXPECT_TRUE(contains(dsgd.output(), "dsgd-mpi run did not finish within 15 s (--wall-timeout)")) << dsgd.output();
  const auto left = left_after(dsgd.seen(), std::chrono::seconds(10));
  EXPECT_TRUE(left.empty()) << "still running: " << names_of(left);
}

TEST_F(AppShutdown, ASimulationPastItsWallTimeoutNamesTheOption) {
  Dsgd dsgd(long_run("simgrid", 2, "100000", {"--platform", "m40-cluster", "--wall-timeout", "2"}),
            dir_ / "output.txt");
  EXPECT_EQ(dsgd.wait(std::chrono::seconds(60)), 1) << dsgd.output();
  EXPECT_TRUE(contains(dsgd.output(), "ran past its wall-time limit of 2") &&
              contains(dsgd.output(), "(--wall-timeout)"))
      << dsgd.output();
  const auto left = left_after(dsgd.seen(), std::chrono::seconds(10));
  EXPECT_TRUE(left.empty()) << "still running: " << names_of(left);
}

TEST(AppMpiWorker, AFailureSummaryNamesAKilledRankAndSkipsTheBanners) {
  // What OpenMPI 4.1's mpirun printed when rank 2 of 3 was killed with SIGKILL.
  const std::string output =
      "--------------------------------------------------------------------------\n"
      "Primary job  terminated normally, but 1 process returned\n"
      "a non-zero exit code. Per user-direction, the job has been aborted.\n"
      "--------------------------------------------------------------------------\n"
      "--------------------------------------------------------------------------\n"
      "mpirun noticed that process rank 2 with PID 0 on node box exited on signal 9 (Killed).\n"
      "--------------------------------------------------------------------------\n";
  EXPECT_EQ(failure_summary(output), "dsgd-mpi rank 2 was killed by SIGKILL (on node box)");
  EXPECT_EQ(failure_summary("dsgd-mpi: rank 1: run: bad\n-----\n"), "dsgd-mpi: rank 1: run: bad");
  EXPECT_EQ(failure_summary("something went wrong\n------------\n\n"), "something went wrong");
}

}  // namespace
}  // namespace dsgd::app
