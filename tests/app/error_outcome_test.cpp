// app/error_outcome.hpp: how dsgd and dsgd-mpi end on an error. A std::bad_alloc that no estimate caught is the
// one-line memory error, exit 1 (it was "unexpected error: std::bad_alloc", exit 3, issue 42).

#include "app/error_outcome.hpp"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include "core/error.hpp"

namespace dsgd::app {
namespace {

TEST(AppErrorOutcome, AFailedAllocationIsTheMemoryErrorExitOne) {
  const ErrorOutcome outcome = outcome_of(std::bad_alloc());
  EXPECT_EQ(outcome.exit_code, kExitFailure);
  EXPECT_TRUE(outcome.message.starts_with("out of memory: an allocation failed with ")) << outcome.message;
  EXPECT_NE(outcome.message.find(" available to this process now"), std::string::npos) << outcome.message;
  EXPECT_EQ(outcome.message.find('\n'), std::string::npos) << "one line";
  EXPECT_EQ(outcome.message.find("unexpected"), std::string::npos) << outcome.message;
  EXPECT_EQ(outcome_of(std::bad_array_new_length()).exit_code, kExitFailure) << "a bad_alloc too";
}

TEST(AppErrorOutcome, EachErrorClassKeepsItsExitCode) {
  EXPECT_EQ(outcome_of(InputError("x.json: bad")).exit_code, kExitUsage);
  EXPECT_EQ(outcome_of(InputError("x.json: bad")).message, "x.json: bad");
  EXPECT_EQ(outcome_of(IoError("y: read failed")).exit_code, kExitFailure);
  EXPECT_EQ(outcome_of(DivergedError("loss nan")).exit_code, kExitFailure);
  const ErrorOutcome internal = outcome_of(InternalError("a bug"));
  EXPECT_EQ(internal.exit_code, kExitInternal);
  EXPECT_EQ(internal.message, "a bug (please report this)");
  const ErrorOutcome foreign = outcome_of(std::logic_error("vector::_M_range_check"));
  EXPECT_EQ(foreign.exit_code, kExitInternal);
  EXPECT_EQ(foreign.message, "unexpected error: vector::_M_range_check");
}

}  // namespace
}  // namespace dsgd::app
