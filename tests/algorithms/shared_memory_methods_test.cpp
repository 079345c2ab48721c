// algorithms/shared_memory/: every method of seed 003's catalog reaches 99.5% closeness to liblinear's optimum on
// small generated text-like (rcv1-test shape) and covtype-like sets; the synchronous ones are bit-identical for a
// seed, on an OpenMP team and in the lockstep schedule; multi-model learns its tasks; the driver's curve, limits
// and sweep; bad options are InputErrors. The tests iterate over the catalog and never name a method.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/shared_memory/driver.hpp"
#include "algorithms/shared_memory/method.hpp"
#include "core/data/sparse_presets.hpp"
#include "core/error.hpp"
#include "core/linear/optimum.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

// A preset of seed 003 Table III at a test's size: `rows` rows, and for text-like sets `features` features with
// rows of 4..300 (mean 30) non-zeros, so a pass takes about a millisecond.
data::SparseDataset small_set(const std::string& preset_name, std::size_t rows, std::size_t features = 0) {
  data::SparsePreset preset = data::find_sparse_preset(preset_name);
  preset.reduced_examples = rows;
  if (features > 0) {
    preset.reduced_features = features;
    preset.max_row_nnz = 300;
    preset.avg_row_nnz = 30;
  }
  return data::generate_preset(preset, data::PresetSize::kReduced, 3);
}

struct Case {
  data::SparseDataset data;
  linear::Problem problem;
  double optimal = 0;
  float alpha = 0;  // a learning rate every method reaches the target with (an assumption the test checks)
};

// The two sets of seed 003's Fig 1 in small: sparse text (RCV1-test-like) and dense covtype-like.
const std::vector<std::unique_ptr<Case>>& cases() {
  static const std::vector<std::unique_ptr<Case>> all = [] {
    std::vector<std::unique_ptr<Case>> made;
    for (const auto& [name, rows, features, alpha] :
         {std::tuple{"rcv1-test-like", 3000, 2000, 0.3F}, std::tuple{"covtype-like", 3000, 0, 0.1F}}) {
      auto c = std::make_unique<Case>();
      c->data = small_set(name, static_cast<std::size_t>(rows), static_cast<std::size_t>(features));
      c->problem = linear::problem(c->data);
      c->optimal = linear::optimum(c->problem).objective;
      c->alpha = alpha;
      made.push_back(std::move(c));
    }
    return made;
  }();
  return all;
}

MethodOptions options_for(const MethodEntry& entry, float alpha) {
  MethodOptions options;
  options.threads = 2;
  options.alpha = alpha;
  options.batch = 64;
  if (entry.multi_model) options.models = 3;
  return options;
}

std::vector<float> trained(const MethodEntry& entry, const linear::Problem& problem, const MethodOptions& options,
                           int passes) {
  const std::unique_ptr<Method> method = entry.make(options);
  method->prepare(problem);
  ModelVector model = make_model(*method, problem.data->features);
  for (int pass = 1; pass <= passes; ++pass) {
    method->pass(model, options.alpha / std::sqrt(static_cast<float>(pass)), pass, nullptr);
  }
  return {model.begin(), model.end()};
}

class AlgorithmsSharedMemoryMethod : public ::testing::TestWithParam<std::string> {
 protected:
  const MethodEntry& entry() const { return find_method(GetParam()); }
};

TEST_P(AlgorithmsSharedMemoryMethod, ReachesTheTargetOnTextAndCovtypeLikeSets) {
  for (const auto& c : cases()) {
    RunOptions run;
    run.max_passes = 60;
    const ConvergenceResult result =
        run_to_closeness(entry(), c->problem, c->optimal, options_for(entry(), c->alpha), run);
    ASSERT_FALSE(result.curve.empty());
    std::printf(
        "%-20s %-32s expectation >= 99.5%% closeness; actual %.3f%% after %d passes, %.4f s, %.1f M nnz/s/thread\n",
        GetParam().c_str(), c->data.name.c_str(), result.curve.back().closeness_percent, result.curve.back().pass,
        result.curve.back().seconds, result.nnz_per_s_per_thread / 1e6);
    EXPECT_GT(result.passes_to_target, 0) << c->data.name;
    EXPECT_GE(result.curve.back().closeness_percent, 99.5) << c->data.name;
    EXPECT_FALSE(result.diverged);
  }
}

TEST_P(AlgorithmsSharedMemoryMethod, RefusesBadOptions) {
  const auto refused = [&](const std::string& what, auto change) {
    MethodOptions options;
    change(options);
    EXPECT_THROW(entry().make(options), InputError) << what;
  };
  refused("threads -1", [](MethodOptions& o) { o.threads = -1; });
  refused("alpha 0", [](MethodOptions& o) { o.alpha = 0; });
  refused("alpha NaN", [](MethodOptions& o) { o.alpha = std::nanf(""); });
  refused("batch 0", [](MethodOptions& o) { o.batch = 0; });
  refused("hog batch -1", [](MethodOptions& o) { o.hog_batch = -1; });
  refused("models 0", [](MethodOptions& o) { o.models = 0; });
  MethodOptions two_models;
  two_models.models = 2;
  if (entry().multi_model) {
    EXPECT_NO_THROW(entry().make(two_models));
  } else {
    EXPECT_THROW(entry().make(two_models), InputError);
  }
}

TEST_P(AlgorithmsSharedMemoryMethod, LockstepScheduleIsReproducible) {
  const Case& c = *cases().front();
  MethodOptions options = options_for(entry(), c.alpha);
  options.threads = 4;
  options.schedule = Schedule::kLockstep;
  EXPECT_EQ(trained(entry(), c.problem, options, 3), trained(entry(), c.problem, options, 3));
}

TEST_P(AlgorithmsSharedMemoryMethod, CurveAndRatesAreRecorded) {
  const Case& c = *cases().front();
  const ConvergenceResult result = run_to_closeness(entry(), c.problem, c.optimal, options_for(entry(), c.alpha));
  ASSERT_GT(result.passes_to_target, 0);
  ASSERT_EQ(result.curve.size(), static_cast<std::size_t>(result.passes_to_target));
  double previous = 0;
  for (std::size_t i = 0; i < result.curve.size(); ++i) {
    EXPECT_EQ(result.curve[i].pass, static_cast<int>(i) + 1);
    EXPECT_NEAR(result.curve[i].seconds, previous + result.curve[i].pass_seconds, 1e-12);
    EXPECT_NEAR(result.curve[i].closeness_percent, linear::closeness_percent(result.curve[i].objective, c.optimal),
                1e-9);
    previous = result.curve[i].seconds;
  }
  EXPECT_DOUBLE_EQ(result.time_to_target_s, result.curve.back().seconds);
  EXPECT_GT(result.nnz_per_s_per_thread, 0);
  EXPECT_EQ(result.threads, entry().parallel ? 2 : 1);
  ASSERT_EQ(result.weights.size(), entry().multi_model ? 3U : 1U);
  EXPECT_EQ(result.weights.front().size(), c.data.features);
  EXPECT_FALSE(result.staleness.has_value());
  // The reported objective is F of the reported weights (the mean over models, all on the data's labels here).
  double mean = 0;
  for (const auto& w : result.weights) mean += linear::objective(c.problem, w);
  EXPECT_NEAR(mean / static_cast<double>(result.weights.size()), result.curve.back().objective, 1e-9);
}

TEST_P(AlgorithmsSharedMemoryMethod, StopsAtThePassLimit) {
  const Case& c = *cases().front();
  RunOptions run;
  run.target_percent = 150;  // beyond reach: closeness is at most about 100%
  run.max_passes = 3;
  const ConvergenceResult result = run_to_closeness(entry(), c.problem, c.optimal, options_for(entry(), c.alpha), run);
  EXPECT_EQ(result.curve.size(), 3U);
  EXPECT_EQ(result.passes_to_target, -1);
  EXPECT_EQ(result.time_to_target_s, -1);
}

TEST_P(AlgorithmsSharedMemoryMethod, SweepKeepsTheFastestRun) {
  const Case& c = *cases().front();
  SweepGrid grid;
  grid.alphas = {0.3F, 1.0F};
  grid.batches = {64};  // HogBatch derives {64 / 2, 64 / 4, 64 / 2, 64} = {16, 32, 64}
  const SweepResult result = sweep(entry(), c.problem, c.optimal, options_for(entry(), 1.0F), grid);
  const std::size_t sizes = entry().batch_option == BatchOption::kHogBatch ? 3 : 1;
  ASSERT_EQ(result.all.size(), grid.alphas.size() * sizes);
  ASSERT_TRUE(result.reached);
  for (const SweepPoint& point : result.all) {
    if (point.result.passes_to_target > 0) {
      EXPECT_LE(result.best.result.time_to_target_s, point.result.time_to_target_s);
    }
    EXPECT_TRUE(point.result.weights.empty());
  }
  EXPECT_FALSE(result.best.result.weights.empty());
  if (entry().batch_option == BatchOption::kHogBatch) {
    EXPECT_EQ(result.all[1].options.hog_batch, 32);
  }
  if (entry().batch_option == BatchOption::kBatch) {
    EXPECT_EQ(result.all[0].options.batch, 64);
  }
  EXPECT_THROW(sweep(entry(), c.problem, c.optimal, options_for(entry(), 1.0F), SweepGrid{{}, {64}, {}}), InputError);
}

INSTANTIATE_TEST_SUITE_P(Catalog, AlgorithmsSharedMemoryMethod, ::testing::ValuesIn(method_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// Serial and Mini-Batch (the entries marked synchronous): the same model bit for bit for a seed, on an OpenMP team
// and in the lockstep schedule; another seed visits the rows in another order.
TEST(AlgorithmsSharedMemoryDeterminism, SynchronousMethodsAreBitIdenticalForASeed) {
  const Case& c = *cases().front();
  int checked = 0;
  for (const MethodEntry& entry : method_catalog()) {
    if (!entry.synchronous) continue;
    ++checked;
    MethodOptions options = options_for(entry, c.alpha);
    options.batch = 512;  // few barriers: a loaded 2-core machine makes every barrier a scheduler round trip
    const std::vector<float> first = trained(entry, c.problem, options, 3);
    EXPECT_EQ(first, trained(entry, c.problem, options, 3)) << entry.name << ": same seed, same threads";
    MethodOptions lockstep = options;
    lockstep.schedule = Schedule::kLockstep;
    EXPECT_EQ(first, trained(entry, c.problem, lockstep, 3)) << entry.name << ": OpenMP team against lockstep";
    MethodOptions reseeded = options;
    reseeded.seed = 2;
    EXPECT_NE(first, trained(entry, c.problem, reseeded, 3)) << entry.name << ": another seed, another order";
  }
  EXPECT_GE(checked, 2);
}

TEST(AlgorithmsSharedMemoryCatalog, UnknownNameListsTheMethods) {
  try {
    find_method("no-such-method");
    FAIL() << "no error";
  } catch (const UnknownNameError& error) {
    for (const std::string& name : method_names()) EXPECT_NE(std::string(error.what()).find(name), std::string::npos);
  }
  for (const std::string& name : method_names()) EXPECT_EQ(find_method(name).name, name);
}

TEST(AlgorithmsSharedMemoryDriver, RefusesBadLimits) {
  const Case& c = *cases().front();
  const MethodEntry& entry = method_catalog().front();
  const MethodOptions options = options_for(entry, c.alpha);
  EXPECT_THROW(run_to_closeness(entry, c.problem, 0.0, options), InputError);
  EXPECT_THROW(run_to_closeness(entry, c.problem, -1.0, options), InputError);
  RunOptions no_passes;
  no_passes.max_passes = 0;
  EXPECT_THROW(run_to_closeness(entry, c.problem, c.optimal, options, no_passes), InputError);
  RunOptions no_time;
  no_time.max_seconds = 0;
  EXPECT_THROW(run_to_closeness(entry, c.problem, c.optimal, options, no_time), InputError);
}

TEST(AlgorithmsSharedMemoryMultiModel, LayoutKeepsAFeaturesModelsOnOneCacheLine) {
  for (const MethodEntry& entry : method_catalog()) {
    if (!entry.multi_model) continue;
    for (int models = 1; models <= 40; ++models) {
      MethodOptions options;
      options.models = models;
      const std::unique_ptr<Method> method = entry.make(options);
      const ModelLayout layout = method->layout();
      EXPECT_EQ(layout.models, models);
      EXPECT_GE(layout.stride, static_cast<std::size_t>(models));
      // A power of two dividing 16 floats (64 bytes), or whole lines.
      EXPECT_TRUE(layout.stride <= 16 ? 16 % layout.stride == 0 : layout.stride % 16 == 0) << models;
      const ModelVector model = make_model(*method, 10);
      EXPECT_EQ(model.size(), 10 * layout.stride);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(model.data()) % 64, 0U);
    }
  }
}

TEST(AlgorithmsSharedMemoryMultiModel, LearnsHiddenTasks) {
  const Case& c = *cases().front();
  constexpr int kModels = 3;
  const auto labels = std::make_shared<const std::vector<float>>(hidden_task_labels(c.data, kModels, 11));
  // Each task's optimum, on a copy of the data with the task's labels.
  std::vector<double> optima;
  data::SparseDataset relabelled = c.data;
  for (std::size_t m = 0; m < kModels; ++m) {
    for (std::size_t i = 0; i < relabelled.rows(); ++i) relabelled.label[i] = (*labels)[i * kModels + m];
    optima.push_back(linear::optimum(linear::problem(relabelled)).objective);
  }
  const double mean_optimum = (optima[0] + optima[1] + optima[2]) / kModels;
  for (const MethodEntry& entry : method_catalog()) {
    if (!entry.multi_model) continue;
    MethodOptions options = options_for(entry, c.alpha);
    options.models = kModels;
    options.task_labels = labels;
    const ConvergenceResult result = run_to_closeness(entry, c.problem, mean_optimum, options);
    EXPECT_GT(result.passes_to_target, 0);
    ASSERT_EQ(result.weights.size(), static_cast<std::size_t>(kModels));
    for (std::size_t m = 0; m < kModels; ++m) {
      for (std::size_t i = 0; i < relabelled.rows(); ++i) relabelled.label[i] = (*labels)[i * kModels + m];
      const double closeness =
          linear::closeness_percent(linear::objective(linear::problem(relabelled), result.weights[m]), optima[m]);
      std::printf("task %zu: expectation near 99.5%% closeness; actual %.3f%%\n", m, closeness);
      EXPECT_GE(closeness, 99.0) << "task " << m;
    }
    options.task_labels = std::make_shared<const std::vector<float>>(c.data.rows(), 1.0F);  // rows x 1, not x 3
    EXPECT_THROW(run_to_closeness(entry, c.problem, mean_optimum, options), InputError);
  }
}

TEST(AlgorithmsSharedMemoryMultiModel, HiddenTaskLabelsStartWithTheDataLabels) {
  const Case& c = *cases().front();
  const std::vector<float> labels = hidden_task_labels(c.data, 4, 5);
  ASSERT_EQ(labels.size(), c.data.rows() * 4);
  std::size_t positive = 0;
  for (std::size_t i = 0; i < c.data.rows(); ++i) {
    EXPECT_EQ(labels[i * 4], c.data.label[i]);
    for (std::size_t m = 1; m < 4; ++m) {
      EXPECT_TRUE(labels[i * 4 + m] == 1.0F || labels[i * 4 + m] == -1.0F);
      positive += labels[i * 4 + m] > 0 ? 1 : 0;
    }
  }
  EXPECT_GT(positive, 0U);
  EXPECT_LT(positive, 3 * c.data.rows());
  EXPECT_EQ(labels, hidden_task_labels(c.data, 4, 5));
  EXPECT_NE(labels, hidden_task_labels(c.data, 4, 6));
  EXPECT_THROW(hidden_task_labels(c.data, 0, 5), InputError);
}

}  // namespace
}  // namespace dsgd::algorithms::shared_memory
