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
    EXPECT_EQ(std::string(e.what()), "unknown executor 'gpu'; valid values are: threads, mpi, simgrid");
  }
  // simgrid trains, in simulation, but measures nothing of this machine.
  EXPECT_EQ(find_executor("simgrid", training_executor_names()).kind, ExecutorKind::kSimgrid);
  EXPECT_THROW(find_executor("simgrid", native_executor_names()), UnknownNameError);
  EXPECT_EQ(find_executor("simgrid", {"threads", "simgrid", "mpi"}).kind, ExecutorKind::kSimgrid);
}

TEST(AppExecutors, TheTableNamesEachKindOnceAndEachTrains) {
  const auto& table = executor_table();
  ASSERT_EQ(table.size(), 3u);
  for (const auto& executor : table) {
    EXPECT_EQ(find_executor(executor.name, {std::string(executor.name)}).kind, executor.kind);
    EXPECT_NE(executor.train, nullptr) << executor.name;
  }
  EXPECT_EQ(training_executor_names(), (std::vector<std::string>{"threads", "mpi", "simgrid"}));
  EXPECT_EQ(native_executor_names(), (std::vector<std::string>{"threads", "mpi"}));
}

TEST(AppExecutors, ANumericSimulationNeedsAPlatformAndACap) {
  std::ostringstream out;
  std::ostringstream err;
  Context context{out, err, "test"};
  const algorithms::RunData data;
  TrainingJob job;
  job.data = &data;
  const auto& simgrid = find_executor("simgrid", training_executor_names());
  try {
    simgrid.train(job, context);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs --platform"), std::string::npos) << e.what();
  }
  job.platform = "cori-knl";
  job.cli.run.budget = {};
  job.cli.run.budget.target_accuracy = 0.85;  // alone: no cap on the wall time
  try {
    simgrid.train(job, context);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs --iterations or --seconds"), std::string::npos) << e.what();
  }
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
