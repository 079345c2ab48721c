#include "core/subprocess.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"

namespace dsgd {
namespace {

TEST(CoreSubprocess, CapturesOutputAndExitCode) {
  const auto result = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(30));
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_FALSE(result.timed_out);
  EXPECT_NE(result.output.find("out"), std::string::npos);
  EXPECT_NE(result.output.find("err"), std::string::npos);
}

// The program waits for a file that only the sink creates, once it has seen the first line: without output as it
// comes, the run would time out.
TEST(CoreSubprocess, TheSinkGetsTheOutputWhileTheProgramRuns) {
  const auto flag = std::filesystem::temp_directory_path() / ("dsgd-sink-test-" + std::to_string(::getpid()));
  std::filesystem::remove(flag);
  std::string seen;
  const auto result =
      run_process({"sh", "-c", "echo first; while [ ! -e '" + flag.string() + "' ]; do sleep 0.05; done; echo second"},
                  std::chrono::seconds(30), {}, nullptr, [&](std::string_view piece) {
                    seen += piece;
                    if (seen.find("first") != std::string::npos) std::ofstream(flag).put('x');
                  });
  std::filesystem::remove(flag);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(seen, "first\nsecond\n");
  EXPECT_EQ(result.output, seen);
}

TEST(CoreSubprocess, KillsAProgramThatOutlivesItsTimeLimit) {
  const auto result = run_process({"sleep", "30"}, std::chrono::seconds(1));
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.exit_code, 128 + 9);
}

TEST(CoreSubprocess, StdinIsClosedSoReadersDoNotHang) {
  const auto result = run_process({"cat"}, std::chrono::seconds(30));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0);
}

TEST(CoreSubprocess, AMissingProgramIsUnavailableAndNamed) {
  try {
    run_process({"dsgd-no-such-program"}, std::chrono::seconds(5));
    FAIL();
  } catch (const UnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("dsgd-no-such-program"), std::string::npos);
  }
  EXPECT_FALSE(program_exists("dsgd-no-such-program"));
  EXPECT_TRUE(program_exists("sh"));
}

// Whether process `pid` is still there (a zombie counts as gone: it runs nothing).
bool alive(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// The pids a shell printed, one per line.
std::vector<int> printed_pids(const std::string& output) {
  std::vector<int> pids;
  std::istringstream in(output);
  for (int pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

TEST(CoreSubprocess, ATimeoutKillsWhatTheProgramStartedToo) {
  // The shell starts a grandchild and waits: killing the shell alone would leave the sleep running.
  const auto result = run_process({"sh", "-c", "sleep 60 & echo $!; wait"}, std::chrono::seconds(1));
  EXPECT_TRUE(result.timed_out);
  const auto pids = printed_pids(result.output);
  ASSERT_EQ(pids.size(), 1U) << result.output;
  EXPECT_FALSE(alive(pids[0])) << "the grandchild sleep " << pids[0] << " outlived the timeout";
  EXPECT_EQ(result.stopped_processes, std::vector<std::string>{"sleep"});
  if (alive(pids[0])) ::kill(pids[0], SIGKILL);
}

TEST(CoreSubprocess, AnInterruptStopsTheProgramAndItsChildren) {
  Interrupt interrupt;
  std::thread requester([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    interrupt.request(SIGINT);
  });
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_process({"sh", "-c", "echo $$; sleep 60 & echo $!; sleep 60 & echo $!; wait"},
                                  std::chrono::seconds(60), {}, &interrupt);
  requester.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.interrupted_by, SIGINT);
  EXPECT_FALSE(result.timed_out);
  EXPECT_LT(seconds, 5.0) << "expectation: the shell and its sleeps end on SIGTERM at once";
  EXPECT_EQ(result.stopped_processes, (std::vector<std::string>{"sleep", "sleep"}));
  const auto pids = printed_pids(result.output);
  ASSERT_EQ(pids.size(), 3U) << result.output;
  for (const int pid : pids) {
    EXPECT_FALSE(alive(pid)) << pid;
    if (alive(pid)) ::kill(pid, SIGKILL);
  }
  EXPECT_TRUE(session_processes(pids[0]).empty());
}

TEST(CoreSubprocess, AnInterruptedProgramThatIgnoresSigtermIsKilledAfterTheGrace) {
  Interrupt interrupt;
  std::chrono::steady_clock::time_point requested;
  std::thread requester([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the shell has set its trap by then
    requested = std::chrono::steady_clock::now();
    interrupt.request(SIGTERM);
  });
  const auto result =
      run_process({"sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"}, std::chrono::seconds(60), {}, &interrupt);
  requester.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - requested).count();
  EXPECT_EQ(result.interrupted_by, SIGTERM);
  EXPECT_EQ(result.exit_code, 128 + SIGKILL);
  const double grace_s = std::chrono::duration<double>(kStopGrace).count();
  EXPECT_GE(seconds, grace_s - 0.5) << "expectation: SIGKILL only after the grace of " << grace_s << " s";
  EXPECT_LT(seconds, grace_s + 5);
}

TEST(CoreSubprocess, TheProgramRunsInASessionOfItsOwn) {
  // The shell's session id (field 6 of /proc/PID/stat) must be its own pid (setsid), not ours.
  const auto result = run_process({"sh", "-c", "echo $$; cut -d ' ' -f 6 /proc/$$/stat"}, std::chrono::seconds(30));
  const auto pids = printed_pids(result.output);
  ASSERT_EQ(pids.size(), 2U) << result.output;
  EXPECT_EQ(pids[0], pids[1]);
}

TEST(CoreInterrupt, NamesSignalsAndSaysWhatWasStopped) {
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  const InterruptedError error(SIGINT, "stopped mpirun and its 3 ranks");
  EXPECT_EQ(std::string(error.what()), "interrupted by SIGINT; stopped mpirun and its 3 ranks");
  EXPECT_EQ(error.signal(), SIGINT);
}

TEST(CoreInterrupt, TheFirstSignalWins) {
  Interrupt interrupt;
  EXPECT_FALSE(interrupt.requested());
  interrupt.request(SIGTERM);
  interrupt.request(SIGINT);
  EXPECT_TRUE(interrupt.requested());
  EXPECT_EQ(interrupt.signal(), SIGTERM);
}

TEST(CoreInterrupt, TheHandlerRunsOnAStackOfItsOwn) {
  // Never on the interrupted code's stack, below its stack pointer (docs/errors.md "Interrupts").
  Interrupt interrupt;
  const InterruptHandlers handlers(interrupt);
  stack_t stack{};
  ASSERT_EQ(::sigaltstack(nullptr, &stack), 0);
  EXPECT_EQ(stack.ss_flags & SS_DISABLE, 0);
  for (const int signal : {SIGINT, SIGTERM}) {
    struct sigaction action {};
    ASSERT_EQ(::sigaction(signal, nullptr, &action), 0);
    EXPECT_NE(action.sa_flags & SA_ONSTACK, 0) << signal_name(signal);
  }
}

TEST(CoreInterrupt, AWatchedSignalIsRequestedAndAnUnwatchedOneEndsTheProcess) {
  Interrupt interrupt;
  {
    const InterruptHandlers handlers(interrupt);
    EXPECT_THROW(InterruptHandlers{interrupt}, InternalError);
    {
      const Interrupt::Watch watch(&interrupt);
      ASSERT_EQ(::raise(SIGINT), 0);
    }
    EXPECT_EQ(interrupt.signal(), SIGINT);
  }
  // Unwatched, in a child: the default action ends it, as if no handler were installed.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Interrupt other;
    const InterruptHandlers handlers(other);
    ::raise(SIGTERM);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
}  // namespace dsgd
