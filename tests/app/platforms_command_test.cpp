// `dsgd platforms new`: a commented file that `platforms show` accepts, never written over an existing path.
#include <gtest/gtest.h>

#include <filesystem>

#include "app/cli.hpp"
#include "core/atomic_file.hpp"
#include "core/json.hpp"
#include "tests/support/cli_run.hpp"

namespace dsgd::app {
namespace {

namespace fs = std::filesystem;
using dsgd::testing::contains;

class AppPlatformsNew : public dsgd::testing::CliScratchTest {};

TEST_F(AppPlatformsNew, WritesACommentedFileThatShowAccepts) {
  const auto file = (dir_ / "my-cluster.json").string();
  auto outcome = dsgd({"platforms", "new", "--from", "dgx-a100-ib", "--out", file});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "platform 'my-cluster'")) << outcome.out;
  EXPECT_TRUE(contains(read_text_file(file), "// bytes per second, not bits"));
  outcome = dsgd({"platforms", "show", file});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "\"name\": \"my-cluster\"")) << outcome.out;
  // A simulation runs on it as it is.
  outcome = dsgd({"simulate", "--platform", file, "--algo", "sync-sgd", "--model", "resnet50", "--workers", "8",
                  "--iterations", "1"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
}

TEST_F(AppPlatformsNew, NeverWritesOverAnExistingPath) {
  const auto file = dir_ / "mine.json";
  write_file_atomically(file, "{}");
  auto outcome = dsgd({"platforms", "new", "--from", "dgx-a100-ib", "--out", file.string()});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "already exists")) << outcome.err;
  EXPECT_EQ(read_text_file(file), "{}");
  outcome = dsgd({"platforms", "new", "--from", "dgx-a100-i", "--out", (dir_ / "x.json").string()});
  EXPECT_EQ(outcome.code, kExitUsage);
  EXPECT_TRUE(contains(outcome.err, "did you mean 'dgx-a100-ib'")) << outcome.err;
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
}

}  // namespace
}  // namespace dsgd::app
