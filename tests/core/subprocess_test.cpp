#include "core/subprocess.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace dsgd {
namespace {

TEST(CoreSubprocess, CapturesOutputAndExitCode) {
  const auto result = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(30));
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_FALSE(result.timed_out);
  EXPECT_NE(result.output.find("out"), std::string::npos);
  EXPECT_NE(result.output.find("err"), std::string::npos);
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

}  // namespace
}  // namespace dsgd
