// algorithms/strads/: generated Lasso problems (unit columns, correlated groups, a LIBSVM round trip), row shards
// whose partial sums add up, the dynamic scheduler's independent sets (no two kept coordinates correlated above
// tau), and the SchMP engine: sequential coordinate descent decreases the objective at every round and gives the
// same beta on 1 and 3 workers; every scheduler reaches the reference objective.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "algorithms/strads/lasso.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/json.hpp"
#include "core/subprocess.hpp"
#include "measure/threads/executor.hpp"

namespace dsgd::algorithms::strads {
namespace {

namespace fs = std::filesystem;

LassoRunResult run_on_threads(const LassoProblem& problem, int workers, const LassoRunOptions& options) {
  LassoRunResult kept;
  WorldOptions world;
  world.size = workers;
  measure::threads::run(world, [&](Comm& comm) {
    auto result = run_lasso(comm, problem, options);
    if (comm.rank() == 0) kept = std::move(result);
  });
  return kept;
}

LassoRunOptions options_for(SchedulerKind kind, double lambda, std::int64_t rounds, std::size_t coordinates = 4) {
  LassoRunOptions options;
  options.scheduler.kind = kind;
  options.scheduler.coordinates = coordinates;
  options.lambda = lambda;
  options.schmp.rounds = rounds;
  options.schmp.eval_every = 1;
  return options;
}

TEST(StradsLasso, GeneratedColumnsHaveUnitNormAndTheirGroupsCorrelation) {
  const auto problem = generate_lasso(lasso_preset("correlated"), "correlated");
  ASSERT_EQ(problem.features, 2000U);
  ASSERT_EQ(problem.rows, 1000U);
  for (const std::size_t a : {0UL, 7UL, 1999UL}) EXPECT_NEAR(column_dot(problem, a, a), 1.0, 1e-5) << a;
  // Groups of 20 at 0.95: within a group about 0.95, across groups about 0 (1,000 rows: +-0.1 at most).
  EXPECT_NEAR(column_dot(problem, 0, 1), 0.95, 0.03);
  EXPECT_NEAR(column_dot(problem, 0, 19), 0.95, 0.03);
  EXPECT_LT(std::abs(column_dot(problem, 0, 20)), 0.15);
  // The same shape and seed, the same problem; another seed, another.
  const auto again = generate_lasso(lasso_preset("correlated"), "correlated");
  EXPECT_EQ(again.value, problem.value);
  EXPECT_EQ(again.y, problem.y);
  EXPECT_NE(load_lasso("correlated:2").y, problem.y);
}

TEST(StradsLasso, SparseGroupsShareTheirSupportAndTheLibsvmRoundTripIsExact) {
  LassoShape shape = lasso_preset("tiny");
  shape.density = 0.3;
  const auto problem = generate_lasso(shape, "sparse");
  EXPECT_LT(problem.nnz(), problem.rows * problem.features / 2);
  EXPECT_TRUE(std::ranges::equal(problem.column_rows(0), problem.column_rows(2))) << "a group shares its rows";
  const fs::path file = fs::temp_directory_path() / ("dsgd-strads-" + std::to_string(::getpid()) + ".libsvm");
  write_lasso_libsvm(problem, file);
  const auto read = load_lasso("libsvm:" + file.string());
  fs::remove(file);
  EXPECT_EQ(read.y, problem.y);
  EXPECT_EQ(read.row, problem.row);
  EXPECT_EQ(read.column_begin, problem.column_begin);
  ASSERT_EQ(read.value.size(), problem.value.size());
  // Reading rescales to unit norm: already unit, so within a float's rounding.
  for (std::size_t k = 0; k < read.value.size(); ++k) EXPECT_NEAR(read.value[k], problem.value[k], 1e-6);
}

TEST(StradsLasso, RowShardsPartialSumsAddUpToTheWhole) {
  const auto problem = generate_lasso(lasso_preset("tiny"), "tiny");
  const auto top = row_shard(problem, 0, 37);
  const auto bottom = row_shard(problem, 37, problem.rows);
  for (const std::size_t a : {0UL, 5UL, 59UL}) {
    double whole = 0;
    double parts = 0;
    for (const auto* part : {&problem, &top, &bottom}) {
      const auto rows = part->column_rows(a);
      const auto values = part->column_values(a);
      double dot = 0;
      for (std::size_t k = 0; k < rows.size(); ++k) dot += static_cast<double>(values[k]) * part->y[rows[k]];
      (part == &problem ? whole : parts) += dot;
    }
    EXPECT_NEAR(parts, whole, 1e-9) << a;
  }
}

TEST(StradsLasso, RefusesImpossibleShapesAndNames) {
  LassoShape shape = lasso_preset("tiny");
  shape.correlation = 1.0;
  EXPECT_THROW(generate_lasso(shape), InputError);
  shape = lasso_preset("tiny");
  shape.nonzeros = shape.features + 1;
  EXPECT_THROW(generate_lasso(shape), InputError);
  EXPECT_THROW(load_lasso("nonesuch"), UnknownNameError);
  EXPECT_THROW(load_lasso("tiny:x"), InputError);
  EXPECT_THROW(load_lasso("libsvm:/nonexistent/file"), InputError);
  const auto problem = generate_lasso(lasso_preset("tiny"));
  SchedulerOptions options;
  options.coordinates = 0;
  EXPECT_THROW(make_scheduler(problem, options), InputError);
  options.coordinates = 8;
  options.candidates = 4;
  EXPECT_THROW(make_scheduler(problem, options), InputError);
  EXPECT_THROW(scheduler_from_string("greedy"), UnknownNameError);
}

TEST(StradsLasso, TheDynamicSchedulersSetsHoldNoTwoCoordinatesCorrelatedAboveTau) {
  const auto problem = generate_lasso(lasso_preset("correlated"), "correlated");
  SchedulerOptions options;
  options.kind = SchedulerKind::kDynamic;
  options.coordinates = 32;
  options.candidates = 256;
  options.tau = 0.2;
  const auto scheduler = make_scheduler(problem, options);
  std::vector<double> change(problem.features, 1.0);
  std::size_t scheduled = 0;
  for (int round = 0; round < 20; ++round) {
    const auto set = scheduler->next(change);
    ASSERT_FALSE(set.empty());
    ASSERT_LE(set.size(), 32U);
    scheduled += set.size();
    EXPECT_EQ(std::set<std::uint32_t>(set.begin(), set.end()).size(), set.size()) << "distinct";
    for (std::size_t i = 0; i < set.size(); ++i) {
      for (std::size_t j = i + 1; j < set.size(); ++j) {
        EXPECT_LE(std::abs(column_dot(problem, set[i], set[j])), options.tau) << set[i] << " and " << set[j];
      }
    }
  }
  // 256 candidates from 100 groups of 20: a set takes at most one per group, and about 32 of them.
  EXPECT_GT(scheduled, 20U * 25U);
  // Maximal: every candidate left out depends on one kept before it.
  const std::vector<std::uint32_t> candidates = {0, 1, 20, 2, 40, 21};
  const auto kept = independent_candidates(problem, candidates, 0.2);
  EXPECT_EQ(kept, (std::vector<std::uint32_t>{0, 20, 40}));
}

TEST(StradsLasso, SequentialCoordinateDescentDecreasesTheObjectiveAndIsTheSameOnOneAndThreeWorkers) {
  const auto problem = generate_lasso(lasso_preset("tiny"), "tiny");
  const double lambda = 0.05 * lambda_max(problem);
  const auto one = run_on_threads(problem, 1, options_for(SchedulerKind::kSerial, lambda, 600));
  const auto three = run_on_threads(problem, 3, options_for(SchedulerKind::kSerial, lambda, 600));
  ASSERT_EQ(one.run.curve.size(), 601U);
  for (std::size_t k = 1; k < one.run.curve.size(); ++k) {
    EXPECT_LE(one.run.curve[k].objective, one.run.curve[k - 1].objective * (1 + 1e-6)) << "round " << k;
  }
  EXPECT_EQ(one.run.stop_reason, "rounds");
  ASSERT_EQ(one.beta.size(), three.beta.size());
  for (std::size_t a = 0; a < one.beta.size(); ++a) EXPECT_NEAR(one.beta[a], three.beta[a], 1e-4) << a;
  // The objective on rank 0 is the one a direct evaluation of its beta gives.
  EXPECT_NEAR(one.run.curve.back().objective, lasso_objective(problem, one.beta, lambda), 1e-5);
  // Cyclic: 600 rounds over 60 features, each coordinate 10 times.
  for (const auto count : one.updates) EXPECT_EQ(count, 10U);
}

TEST(StradsLasso, OnCorrelatedFeaturesShotgunDivergesWhereTheDynamicSchedulerDoesNot) {
  // Groups of 20 columns correlated at 0.95; 128 coordinates a round out of 600: Shotgun's random sets hold several
  // of a group, whose updates from the same residual overshoot together; strads-dynamic's hold one per group.
  LassoShape shape = lasso_preset("correlated");
  shape.rows = 300;
  shape.features = 600;
  const auto problem = generate_lasso(shape, "correlated-600");
  const double lambda = 0.05 * lambda_max(problem);
  auto options = options_for(SchedulerKind::kShotgun, lambda, 100, 128);
  const auto shotgun = run_on_threads(problem, 2, options);
  options.scheduler.kind = SchedulerKind::kDynamic;
  const auto dynamic = run_on_threads(problem, 2, options);
  std::printf("shotgun: %s after %lld rounds; strads-dynamic: %.6g after %lld rounds (from %.6g)\n",
              shotgun.run.stop_reason.c_str(), static_cast<long long>(shotgun.run.rounds),
              dynamic.run.curve.back().objective, static_cast<long long>(dynamic.run.rounds),
              dynamic.run.curve.front().objective);
  EXPECT_EQ(shotgun.run.stop_reason, "diverged");
  EXPECT_EQ(dynamic.run.stop_reason, "rounds");
  EXPECT_LT(dynamic.run.curve.back().objective, 0.5 * dynamic.run.curve.front().objective);
}

// The stored optimum of "tiny" at 0.05 lambda_max, computed by scikit-learn (tests/data/strads_lasso_reference.json).
struct Reference {
  double lambda = 0;
  double objective = 0;
};

Reference stored_reference() {
  const Json json = read_json_file(fs::path(DSGD_TEST_DATA_DIR) / "strads_lasso_reference.json");
  return {json.at("lambda").get<double>(), json.at("objective").get<double>()};
}

TEST(StradsLasso, TheStoredReferenceIsScikitLearnsOptimumOfTheGeneratedProblem) {
  const auto problem = generate_lasso(lasso_preset("tiny"), "tiny");
  const Reference reference = stored_reference();
  // The generator still makes the problem the reference was computed for.
  ASSERT_NEAR(0.05 * lambda_max(problem), reference.lambda, 1e-12 * reference.lambda)
      << "the tiny problem changed: recompute tests/data/strads_lasso_reference.json with its command";
  const fs::path python = "/usr/bin/python3";
  if (!fs::exists(python) ||
      run_process({python.string(), "-c", "import sklearn"}, std::chrono::seconds(60)).exit_code != 0) {
    GTEST_SKIP() << "python3-sklearn is not installed: the stored value stands for it";
  }
  const fs::path file = fs::temp_directory_path() / ("dsgd-strads-reference-" + std::to_string(::getpid()));
  write_lasso_libsvm(problem, file);
  const auto result = run_process({python.string(), fs::path(DSGD_TEST_DATA_DIR) / "../../scripts/lasso_reference.py",
                                   file.string(), significant(reference.lambda, 17)},
                                  std::chrono::seconds(120));
  fs::remove(file);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const double live = parse_json(result.output, "lasso_reference.py").at("objective").get<double>();
  std::printf("scikit-learn now: %.12g; stored: %.12g\n", live, reference.objective);
  EXPECT_NEAR(live, reference.objective, 1e-9 * reference.objective);
}

TEST(StradsLasso, EverySchedulerReachesTheReferenceObjective) {
  const auto problem = generate_lasso(lasso_preset("tiny"), "tiny");
  const Reference reference = stored_reference();
  for (const auto kind :
       {SchedulerKind::kSerial, SchedulerKind::kShotgun, SchedulerKind::kStatic, SchedulerKind::kDynamic}) {
    for (const int workers : {1, 3}) {
      auto options = options_for(kind, reference.lambda, 20000);
      options.schmp.eval_every = 20;
      options.schmp.target_objective = reference.objective * (1 + 1e-5);
      const auto result = run_on_threads(problem, workers, options);
      const double objective = result.run.curve.back().objective;
      std::printf("%s on %d workers: %.10g after %lld rounds (%s)\n", std::string(to_string(kind)).c_str(), workers,
                  objective, static_cast<long long>(result.run.rounds), result.run.stop_reason.c_str());
      EXPECT_EQ(result.run.stop_reason, "target objective") << to_string(kind) << ", " << workers << " workers";
      EXPECT_LE(std::abs(objective - reference.objective), 1e-4 * reference.objective) << to_string(kind);
    }
  }
}

}  // namespace
}  // namespace dsgd::algorithms::strads
