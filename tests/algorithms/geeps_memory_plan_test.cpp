// algorithms/geeps/memory_plan.hpp: GeePS's plan of host-device movement for one steady-state iteration. A model
// that fits stays resident and moves nothing; one that does not keeps every step's buffers and the next step's on
// the device within its memory, moves written buffers back before dropping them, and evicts by farthest next use;
// a step that alone exceeds the device is refused by name.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "algorithms/geeps/memory_plan.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::geeps {
namespace {

// A chain of `layers` layers: parameters p_i (100 B) and activations a_0..a_L (200 B each). Forward i reads p_i and
// a_i and writes a_{i+1}; backward i (last layer first) reads p_i, a_i and a_{i+1} and writes p_i (its update).
AccessPattern chain(std::uint32_t layers) {
  AccessPattern pattern;
  for (std::uint32_t i = 0; i < layers; ++i) pattern.buffers.push_back({"p" + std::to_string(i), 100});
  for (std::uint32_t i = 0; i <= layers; ++i) pattern.buffers.push_back({"a" + std::to_string(i), 200});
  const auto activation = [&](std::uint32_t i) { return layers + i; };
  for (std::uint32_t i = 0; i < layers; ++i) {
    pattern.steps.push_back({"forward " + std::to_string(i), {i, activation(i)}, {activation(i + 1)}});
  }
  for (std::uint32_t i = layers; i-- > 0;) {
    pattern.steps.push_back({"backward " + std::to_string(i), {i, activation(i), activation(i + 1)}, {i}});
  }
  return pattern;
}

TEST(GeepsMemoryPlan, AModelThatFitsStaysResidentAndMovesNothing) {
  const auto pattern = chain(4);  // 4 x 100 + 5 x 200 = 1,400 B
  const auto plan = plan_memory(pattern, 1400);
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.to_device_bytes, 0U);
  EXPECT_EQ(plan.to_host_bytes, 0U);
  EXPECT_EQ(plan.peak_bytes, 1400U);
  ASSERT_EQ(plan.steps.size(), 8U);
}

TEST(GeepsMemoryPlan, AModelLargerThanTheDeviceKeepsEachStepAndTheNextWithinItsMemory) {
  const auto pattern = chain(4);
  const std::uint64_t device = 900;  // 64% of the model; a step with the next needs at most 800
  const auto plan = plan_memory(pattern, device);
  EXPECT_FALSE(plan.fits);
  ASSERT_EQ(plan.steps.size(), pattern.steps.size());
  std::uint64_t moved_in = 0;
  for (std::size_t k = 0; k < plan.steps.size(); ++k) {
    const auto& step = plan.steps[k];
    EXPECT_LE(step.resident_bytes, device) << pattern.steps[k].name;
    // Every window fits, so every step's buffers were prefetched during the step before.
    EXPECT_EQ(step.stalled_bytes, 0U) << pattern.steps[k].name;
    for (const auto& transfer : step.to_device) moved_in += transfer.bytes;
    for (const auto& transfer : step.to_host) {
      // Only what some step writes goes back: activations a1..a4 and the parameters.
      EXPECT_NE(pattern.buffers[transfer.buffer].name, "a0") << "a0 is only read";
    }
  }
  EXPECT_EQ(moved_in, plan.to_device_bytes);
  EXPECT_GT(plan.to_device_bytes, 0U);
  EXPECT_GT(plan.to_host_bytes, 0U);
  EXPECT_LE(plan.peak_bytes, device);
  // Less device memory, more movement.
  EXPECT_GT(plan_memory(pattern, 700).to_device_bytes, plan.to_device_bytes);
}

TEST(GeepsMemoryPlan, EvictsTheBufferUsedFarthestAhead) {
  // Steps use A, B, A, C in turn (100 B each) on a 200 B device: while A and B are in, making room for C at the
  // third step drops B (next used a whole cycle later), not A (used again right after C).
  AccessPattern pattern;
  pattern.buffers = {{"A", 100}, {"B", 100}, {"C", 100}};
  pattern.steps = {{"1", {0}, {}}, {"2", {1}, {}}, {"3", {0}, {}}, {"4", {2}, {}}};
  const auto plan = plan_memory(pattern, 200);
  // Steady state: A stays; B and C take turns in the other slot, each fetched once an iteration.
  EXPECT_EQ(plan.to_device_bytes, 200U);
  EXPECT_EQ(plan.to_host_bytes, 0U) << "nothing was written";
  for (const auto& step : plan.steps) {
    for (const auto& transfer : step.to_device) EXPECT_NE(transfer.buffer, 0U) << "A never leaves";
  }
}

// g is written by "make g" (without reading it) and read by "use g" alone: after "use g" it holds nothing anyone
// will read, so making room for "big" drops it without a copy to the host, and "make g" gets it without a copy to
// the device.
TEST(GeepsMemoryPlan, ADeadBufferMovesNeitherWay) {
  AccessPattern pattern;
  pattern.buffers = {{"g", 150}, {"p", 100}, {"big", 300}};
  pattern.steps = {{"make g", {}, {0}}, {"use g", {0, 1}, {}}, {"big", {2}, {}}};
  const auto plan = plan_memory(pattern, 400);
  ASSERT_FALSE(plan.fits);
  EXPECT_EQ(plan.to_host_bytes, 0U);
  for (const auto& step : plan.steps) {
    for (const auto& transfer : step.to_device) EXPECT_NE(transfer.buffer, 0U) << "g came from the host";
  }
  EXPECT_EQ(plan.steps[0].stalled_bytes, 0U);
  EXPECT_EQ(plan.to_device_bytes, 400U);  // p and big, each once
  EXPECT_LE(plan.peak_bytes, 400U);
}

TEST(GeepsMemoryPlan, RefusesAStepLargerThanTheDeviceAndUnknownBuffers) {
  const auto pattern = chain(2);
  try {
    plan_memory(pattern, 450);
    FAIL() << "every step needs 500 B";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("'forward 0' needs 500 bytes"), std::string::npos) << error.what();
  }
  AccessPattern broken = pattern;
  broken.steps[0].reads.push_back(99);
  EXPECT_THROW(plan_memory(broken, 10000), InputError);
}

TEST(GeepsMemoryPlan, AVirtualIterationOfAZooModelTouchesEveryBufferAndPlansWithinTheDevice) {
  const ModelSpec model = build_model("alexnet");
  const auto pattern = virtual_iteration(model, 64);
  ASSERT_EQ(pattern.steps.size(), 2 * model.layers.size());
  std::uint64_t total = 0;
  std::uint64_t parameters = 0;
  for (const auto& buffer : pattern.buffers) {
    total += buffer.bytes;
    if (buffer.name.rfind("parameters:", 0) == 0) parameters += buffer.bytes;
  }
  EXPECT_EQ(parameters, static_cast<std::uint64_t>(model.parameters()) * 4);
  EXPECT_EQ(total, parameters + 2 * 64 * static_cast<std::uint64_t>(model.activation_bytes()) +
                       64 * static_cast<std::uint64_t>(model.input.elements()) * 4);
  std::vector<bool> used(pattern.buffers.size(), false);
  for (const auto& step : pattern.steps) {
    for (const auto b : step.reads) used[b] = true;
    for (const auto b : step.writes) used[b] = true;
  }
  EXPECT_TRUE(std::all_of(used.begin(), used.end(), [](bool u) { return u; }));
  // Half of the model's bytes on the device: within it at every step, and more moved than with three quarters.
  const auto half = plan_memory(pattern, total / 2);
  const auto three_quarters = plan_memory(pattern, total * 3 / 4);
  std::printf(
      "alexnet, batch 64: %.0f MB in all; moved per iteration with half of it on the device %.0f MB, with "
      "three quarters %.0f MB\n",
      static_cast<double>(total) / 1e6, static_cast<double>(half.to_device_bytes + half.to_host_bytes) / 1e6,
      static_cast<double>(three_quarters.to_device_bytes + three_quarters.to_host_bytes) / 1e6);
  EXPECT_LE(half.peak_bytes, total / 2);
  EXPECT_GT(half.to_device_bytes, three_quarters.to_device_bytes);
  EXPECT_THROW(virtual_iteration(model, 0), InputError);
}

// The report's larger-than-the-device case (docs/geeps.md): the buffers of its models at batch 64 against a 4 GiB
// device, and what one iteration then moves.
TEST(GeepsMemoryPlan, TheReportsModelsNeedMoreThanFourGibibytesAtBatch64) {
  constexpr std::uint64_t kDevice = std::uint64_t{4} << 30;
  for (const char* name : {"resnet50", "vgg16"}) {
    const auto pattern = virtual_iteration(build_model(name), 64);
    const std::uint64_t total = buffer_bytes(pattern);
    const auto plan = plan_memory(pattern, kDevice);
    std::printf("%s, batch 64: %.2f GB of buffers; on a 4 GiB device %.2f GB moved per iteration, %.2f GB stalled\n",
                name, static_cast<double>(total) / 1e9,
                static_cast<double>(plan.to_device_bytes + plan.to_host_bytes) / 1e9, [&] {
                  std::uint64_t stalled = 0;
                  for (const auto& step : plan.steps) stalled += step.stalled_bytes;
                  return static_cast<double>(stalled) / 1e9;
                }());
    EXPECT_GT(total, kDevice) << name;
    EXPECT_FALSE(plan.fits) << name;
    EXPECT_LE(plan.peak_bytes, kDevice) << name;
  }
}

}  // namespace
}  // namespace dsgd::algorithms::geeps
