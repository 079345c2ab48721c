#include "app/executors.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace dsgd::app {
namespace {

TEST(AppExecutors, AnUnknownOrRefusedNameListsTheAcceptedOnes) {
  try {
    find_executor("gpu", training_executor_names());
    FAIL() << "no error";
  } catch (const UnknownNameError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown executor 'gpu'; valid values are: threads, mpi");
  }
  // simgrid is an executor, but not one that trains natively.
  EXPECT_THROW(find_executor("simgrid", training_executor_names()), UnknownNameError);
  EXPECT_EQ(find_executor("simgrid", {"threads", "simgrid", "mpi"}).kind, ExecutorKind::kSimgrid);
}

TEST(AppExecutors, TheTableNamesEachKindOnceAndTrainsNatively) {
  const auto& table = executor_table();
  ASSERT_EQ(table.size(), 3u);
  for (const auto& executor : table) {
    EXPECT_EQ(find_executor(executor.name, {std::string(executor.name)}).kind, executor.kind);
    EXPECT_EQ(executor.train == nullptr, executor.kind == ExecutorKind::kSimgrid) << executor.name;
  }
  EXPECT_EQ(training_executor_names(), (std::vector<std::string>{"threads", "mpi"}));
}

TEST(AppExecutors, ThreadsTrainingNeedsTheDataLoaded) {
  std::ostringstream out;
  std::ostringstream err;
  Context context{out, err, "test"};
  TrainingJob job;
  EXPECT_THROW(find_executor("threads", training_executor_names()).train(job, context), InternalError);
}

}  // namespace
}  // namespace dsgd::app
