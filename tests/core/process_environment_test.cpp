#include "core/process_environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace {

// Sets or clears a variable for one test and puts the old value back after it.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value->c_str(), 1) : ::unsetenv(name);
  }
  ~ScopedVariable() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "(unset)";
}

// GOMP_SPINCOUNT set keeps set_process_environment from re-executing this test program.
TEST(CoreProcessEnvironment, LeavesHwlocsDisplayProbeOutWhereTheUserDidNotChoose) {
  const ScopedVariable spin("GOMP_SPINCOUNT", "1000");
  const ScopedVariable hwloc("HWLOC_COMPONENTS", std::nullopt);
  char* argv[] = {nullptr};
  dsgd::set_process_environment(argv);
  EXPECT_EQ(variable("HWLOC_COMPONENTS"), "-gl");
}

TEST(CoreProcessEnvironment, KeepsTheUsersOwnSettings) {
  const ScopedVariable spin("GOMP_SPINCOUNT", "77");
  const ScopedVariable hwloc("HWLOC_COMPONENTS", "-opencl");
  char* argv[] = {nullptr};
  dsgd::set_process_environment(argv);
  EXPECT_EQ(variable("HWLOC_COMPONENTS"), "-opencl");
  EXPECT_EQ(variable("GOMP_SPINCOUNT"), "77");
}

}  // namespace
