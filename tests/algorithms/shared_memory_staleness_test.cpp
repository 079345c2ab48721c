// algorithms/shared_memory/: staleness against seed 003 Tables I-II. The formulas give the tables' T = 8, S = 1024,
// HS = S/T examples; in the lockstep schedule (every update takes the same time, seed 003's assumption) every method
// measures exactly its [min, max]; on real threads serial is 0, Mini-Batch exactly S - 1, and the racing methods
// keep their minimum (their maximum is reported, not asserted: two preempted cores make it unbounded). Iterates over
// the catalog without naming a method.

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "algorithms/shared_memory/method.hpp"
#include "algorithms/shared_memory/staleness.hpp"
#include "core/data/sparse_presets.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory {
namespace {

// 2048 text-like rows over 500 features: whole batches of S = 1024 and units of HS = 128 at T = 8.
const data::SparseDataset& rows() {
  static const data::SparseDataset data = [] {
    data::SparsePreset preset = data::find_sparse_preset("rcv1-test-like");
    preset.reduced_examples = 2048;
    preset.reduced_features = 500;
    preset.max_row_nnz = 100;
    preset.avg_row_nnz = 20;
    return data::generate_preset(preset, data::PresetSize::kReduced, 5);
  }();
  return data;
}

StalenessHistogram measure(const MethodEntry& entry, const MethodOptions& options, int passes) {
  const std::unique_ptr<Method> method = entry.make(options);
  const linear::Problem problem = linear::problem(rows());
  method->prepare(problem);
  ModelVector model = make_model(*method, rows().features);
  StalenessRecorder recorder(method->threads());
  for (int pass = 1; pass <= passes; ++pass) method->pass(model, 0.5F, pass, &recorder);
  return recorder.merged();
}

// A catalog method's staleness bounds by its own formulas and its staleness measured over 2 passes, both printed:
// `threads` threads, S = `batch`, and 4 models for the method that trains several.
struct BoundsAndMeasured {
  StalenessBounds expected;
  StalenessHistogram measured;
};

BoundsAndMeasured measure_beside_bounds(const MethodEntry& entry, int threads, int batch, Schedule schedule) {
  MethodOptions options;
  options.threads = threads;
  options.batch = batch;
  options.schedule = schedule;
  if (entry.multi_model) options.models = 4;
  const StalenessBounds expected = entry.make(options)->staleness_bounds();
  const StalenessHistogram measured = measure(entry, options, 2);
  const bool lockstep = schedule == Schedule::kLockstep;
  std::printf("%-20s %s T=%d: expectation [%llu, %llu]%s; actual [%llu, %llu], mean %.2f over %llu writes\n",
              entry.name.c_str(), lockstep ? "lockstep" : "threads", threads,
              static_cast<unsigned long long>(expected.min), static_cast<unsigned long long>(expected.max),
              lockstep ? "" : " (the max in lockstep)", static_cast<unsigned long long>(measured.min),
              static_cast<unsigned long long>(measured.max), measured.mean,
              static_cast<unsigned long long>(measured.count));
  return {expected, measured};
}

TEST(AlgorithmsSharedMemoryStaleness, FormulasGiveSeed003Examples) {
  // Table I and Table II at T = 8, S = 1024, HS = S/T = 128, as printed in seed 003.
  const auto expect = [](StalenessBounds actual, std::uint64_t min, std::uint64_t max, const char* what) {
    std::printf("%-22s expectation [%llu, %llu]; actual [%llu, %llu]\n", what, static_cast<unsigned long long>(min),
                static_cast<unsigned long long>(max), static_cast<unsigned long long>(actual.min),
                static_cast<unsigned long long>(actual.max));
    EXPECT_EQ(actual.min, min) << what;
    EXPECT_EQ(actual.max, max) << what;
  };
  expect(table1_staleness(SharingScheme::kHogwild, 8, 1), 0, 7, "Table I Hogwild");
  expect(table1_staleness(SharingScheme::kMiniBatch, 8, 1024), 1024, 1024, "Table I Mini-Batch");
  expect(table1_staleness(SharingScheme::kHogBatch, 8, 128), 128, 1024, "Table I HogBatch");
  expect(table2_staleness(SharingScheme::kHogwild, 8, 1), 0, 7, "Table II Hogwild");
  expect(table2_staleness(SharingScheme::kMiniBatch, 8, 1024), 896, 896, "Table II Mini-Batch");
  expect(table2_staleness(SharingScheme::kHogBatch, 8, 128), 0, 896, "Table II HogBatch");
  expect(table1_staleness(SharingScheme::kSerial, 1, 1), 0, 0, "Serial");
  EXPECT_THROW(table1_staleness(SharingScheme::kHogBatch, 0, 128), InputError);
  EXPECT_THROW(table2_staleness(SharingScheme::kMiniBatch, 8, 0), InputError);
}

TEST(AlgorithmsSharedMemoryStaleness, RecorderMergesThreads) {
  StalenessRecorder recorder(3);
  for (const std::uint64_t value : {0, 1, 2, 3}) recorder.record(0, value);
  recorder.record(2, 1000);
  const StalenessHistogram histogram = recorder.merged();
  EXPECT_EQ(histogram.count, 5U);
  EXPECT_EQ(histogram.min, 0U);
  EXPECT_EQ(histogram.max, 1000U);
  EXPECT_DOUBLE_EQ(histogram.mean, 1006.0 / 5);
  // Buckets: {0}, [1, 2), [2, 4), ..., [512, 1024).
  ASSERT_EQ(histogram.buckets.size(), 11U);
  EXPECT_EQ(histogram.buckets[0], 1U);
  EXPECT_EQ(histogram.buckets[1], 1U);
  EXPECT_EQ(histogram.buckets[2], 2U);
  EXPECT_EQ(histogram.buckets[10], 1U);
  EXPECT_EQ(StalenessRecorder(1).merged().count, 0U);
  EXPECT_THROW(StalenessRecorder(0), InputError);
}

// T = 8, S = 1024, HS = 128: seed 003's example, simulated in lockstep. Each method measures exactly its bounds:
// Hogwild-like [0, 7], Mini-Batch [1023, 1023] and HogBatch [127, 1023] (Table I minus the sample itself),
// HogBatch with the local model [0, 896] (Table II), serial [0, 0].
TEST(AlgorithmsSharedMemoryStaleness, LockstepMeasuresTheTables) {
  for (const MethodEntry& entry : method_catalog()) {
    const auto [expected, measured] = measure_beside_bounds(entry, 8, 1024, Schedule::kLockstep);
    EXPECT_GT(measured.count, 0U) << entry.name;
    EXPECT_EQ(measured.min, expected.min) << entry.name;
    EXPECT_EQ(measured.max, expected.max) << entry.name;
  }
}

// The lockstep Hogwild schedule in detail: in every tick thread t writes after t others, so the values 0..T-1 come
// equally often.
TEST(AlgorithmsSharedMemoryStaleness, LockstepHogwildSpreadsEvenly) {
  for (const MethodEntry& entry : method_catalog()) {
    if (entry.batch_option != BatchOption::kNone || !entry.parallel) continue;
    MethodOptions options;
    options.threads = 4;
    options.schedule = Schedule::kLockstep;
    const StalenessHistogram measured = measure(entry, options, 1);
    EXPECT_EQ(measured.count, rows().rows()) << entry.name;
    EXPECT_DOUBLE_EQ(measured.mean, 1.5) << entry.name;  // (0 + 1 + 2 + 3) / 4
    ASSERT_EQ(measured.buckets.size(), 3U);              // {0}, {1}, {2, 3}
    EXPECT_EQ(measured.buckets[0], rows().rows() / 4) << entry.name;
    EXPECT_EQ(measured.buckets[2], rows().rows() / 2) << entry.name;
  }
}

// On an OpenMP team of 2: the first write of a pass has nobody before it, so every method reaches its minimum;
// synchronous methods are exact throughout. The racing methods' maximum depends on preemption: reported only.
TEST(AlgorithmsSharedMemoryStaleness, RealThreadsKeepTheMinimum) {
  for (const MethodEntry& entry : method_catalog()) {
    const auto [expected, measured] = measure_beside_bounds(entry, 2, 256, Schedule::kThreads);
    ::testing::Test::RecordProperty(entry.name + "_max_staleness", std::to_string(measured.max));
    EXPECT_GT(measured.count, 0U) << entry.name;
    EXPECT_EQ(measured.min, expected.min) << entry.name;
    if (entry.synchronous) {
      EXPECT_EQ(measured.max, expected.max) << entry.name;
    }
  }
}

}  // namespace
}  // namespace dsgd::algorithms::shared_memory
