// Kernel profiles (platforms/kernel_profile.hpp): measured per-layer times, interpolated between measured batches,
// read and written as JSON on their own or inside a platform; and the PyTorch profiler trace reader
// (platforms/torch_trace.hpp) on a trace python3-torch wrote on this machine (scripts/torch_trace.py).
#include "platforms/kernel_profile.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/model_zoo.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"
#include "platforms/torch_trace.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::platforms {
namespace {

const ProfileKey kConv1{"lenet", "conv1", ProfilePhase::kForward, 1};

KernelProfile two_point_profile() {
  KernelProfile profile;
  profile.device = "test CPU";
  profile.source = "test";
  profile.add(kConv1, 16, 1e-3);
  profile.add(kConv1, 64, 4e-3);
  return profile;
}

TEST(KernelProfile, InterpolatesBetweenMeasuredBatchesAndCoversNothingOutside) {
  const KernelProfile profile = two_point_profile();
  EXPECT_DOUBLE_EQ(*profile.seconds(kConv1, 16), 1e-3);
  EXPECT_DOUBLE_EQ(*profile.seconds(kConv1, 64), 4e-3);
  EXPECT_DOUBLE_EQ(*profile.seconds(kConv1, 32), 1e-3 + 3e-3 * 16 / 48);
  EXPECT_FALSE(profile.seconds(kConv1, 8)) << "below the measured batches";
  EXPECT_FALSE(profile.seconds(kConv1, 128)) << "above them";
  EXPECT_FALSE(profile.seconds({"lenet", "conv1", ProfilePhase::kForward, 2}, 32)) << "other threads";
  EXPECT_FALSE(profile.seconds({"lenet", "conv1", ProfilePhase::kBackward, 1}, 32)) << "other phase";
  EXPECT_FALSE(profile.seconds({"lenet", "conv2", ProfilePhase::kForward, 1}, 32)) << "other layer";
}

TEST(KernelProfile, RefusesImpossibleTimesAndBatches) {
  KernelProfile profile;
  EXPECT_THROW(profile.add(kConv1, 0, 1e-3), InputError);
  EXPECT_THROW(profile.add(kConv1, 16, 0), InputError);
  EXPECT_THROW(profile.add(kConv1, 16, -1), InputError);
  EXPECT_THROW(profile.add(kConv1, 16, 1e9), InputError) << "a kernel of 30 years is a unit typo";
  EXPECT_THROW(profile.add({"", "conv1", ProfilePhase::kForward, 1}, 16, 1e-3), InputError);
}

TEST(KernelProfile, RoundTripsAsJsonAloneAndInsideAPlatform) {
  const KernelProfile profile = two_point_profile();
  const Json json = to_json(profile);
  EXPECT_EQ(parse_kernel_profile(JsonView(json, "p.json")), profile);

  Json platform = read_json_file(std::string(DSGD_TEST_DATA_DIR) + "/platforms/minimal.json");
  platform["nodes"]["cpu"]["kernel_profile"] = json;
  const Platform loaded = parse_platform(platform, "minimal.json");
  ASSERT_TRUE(loaded.nodes.cpu.profile);
  EXPECT_EQ(*loaded.nodes.cpu.profile, profile);
  EXPECT_EQ(to_json(parse_platform(to_json(loaded), "again.json")), to_json(loaded));
}

TEST(KernelProfile, MalformedFilesNameTheFieldAndWhatWasExpected) {
  const auto message = [](const Json& json) {
    return testing::error_of<InputError>([&] { parse_kernel_profile(JsonView(json, "p.json")); });
  };
  Json json = to_json(two_point_profile());
  Json descending = json;
  descending["kernels"][0]["points"] = {{64, 4e-3}, {16, 1e-3}};
  EXPECT_NE(message(descending).find("ascending"), std::string::npos) << message(descending);
  Json zero = json;
  zero["kernels"][0]["points"][0][1] = 0;
  EXPECT_NE(message(zero).find("p.json"), std::string::npos) << message(zero);
  Json phase = json;
  phase["kernels"][0]["phase"] = "sideways";
  EXPECT_NE(message(phase).find("backward-weights"), std::string::npos) << "lists the phases: " << message(phase);
  Json repeated = json;
  repeated["kernels"].push_back(json["kernels"][0]);
  EXPECT_NE(message(repeated).find("repeats"), std::string::npos) << message(repeated);
  Json typo = json;
  typo["kernels"][0]["thread"] = 1;
  EXPECT_NE(message(typo).find("thread"), std::string::npos) << message(typo);
}

TEST(KernelProfile, AttachesToTheDevicesWhereThereAreAnyElseTheCpu) {
  Platform cpu_only =
      parse_platform(read_json_file(std::string(DSGD_TEST_DATA_DIR) + "/platforms/minimal.json"), "minimal.json");
  const auto profile = std::make_shared<const KernelProfile>(two_point_profile());
  attach_kernel_profile(cpu_only, profile);
  EXPECT_EQ(cpu_only.nodes.cpu.profile, profile);
  Platform gpus = load_platform(std::string(DSGD_TEST_DATA_DIR) + "/platforms/gpu8-10gbe.json");
  attach_kernel_profile(gpus, profile);
  EXPECT_FALSE(gpus.nodes.cpu.profile);
  for (const auto& group : gpus.nodes.devices) EXPECT_EQ(group.profile, profile);
}

// --- PyTorch traces ----------------------------------------------------------------------------------------------

TraceProfile lenet_trace() {
  return profile_from_torch_trace(std::string(DSGD_TEST_DATA_DIR) + "/torch_trace_lenet_b16.json", build_model("lenet"),
                                  16, 1);
}

double traced(const TraceProfile& trace, const std::string& layer, ProfilePhase phase) {
  const auto seconds = trace.profile.seconds({"lenet", layer, phase, 1}, 16);
  return seconds ? *seconds : -1;
}

// The trace python3-torch 1.13 wrote (the autograd profiler's Chrome trace: a bare array, whole µs). The expected
// times are its events' durations, read off the file.
TEST(TorchTrace, EveryLenetLayerIsFoundForwardAndBackward) {
  const TraceProfile trace = lenet_trace();
  EXPECT_TRUE(trace.unmatched.empty()) << trace.unmatched.front();
  const ModelSpec lenet = build_model("lenet");
  EXPECT_EQ(trace.profile.kernels().size(), 2 * lenet.layers.size());
  EXPECT_DOUBLE_EQ(traced(trace, "conv1", ProfilePhase::kForward), 4904e-6);
  EXPECT_DOUBLE_EQ(traced(trace, "conv2", ProfilePhase::kForward), 582e-6);
  EXPECT_DOUBLE_EQ(traced(trace, "ip1", ProfilePhase::kForward), 285e-6);
  EXPECT_DOUBLE_EQ(traced(trace, "relu1", ProfilePhase::kForward), 21e-6);
  EXPECT_DOUBLE_EQ(traced(trace, "prob", ProfilePhase::kForward), 43e-6) << "aten::cross_entropy_loss";
  // Backward: the gradient function, with its parameters' AccumulateGrad and a linear layer's TBackward0.
  EXPECT_DOUBLE_EQ(traced(trace, "prob", ProfilePhase::kBackward), (21 + 11) * 1e-6) << "NllLoss + LogSoftmax";
  EXPECT_DOUBLE_EQ(traced(trace, "ip1", ProfilePhase::kBackward), (906 + 5 + 2 + 1) * 1e-6);
  EXPECT_DOUBLE_EQ(traced(trace, "relu1", ProfilePhase::kBackward), 13e-6);
  EXPECT_DOUBLE_EQ(traced(trace, "conv1", ProfilePhase::kBackward), (493 + 3 + 1) * 1e-6);
  EXPECT_DOUBLE_EQ(traced(trace, "pool1", ProfilePhase::kBackward), 49e-6);
  EXPECT_NE(trace.profile.source.find("torch_trace_lenet_b16.json"), std::string::npos) << trace.profile.source;
}

// Kineto's form: {"traceEvents": [...]}, operators marked "cpu_op", a ProfilerStep annotation around the
// iteration, Python frames and device kernels beside them.
TEST(TorchTrace, ReadsKinetosFormAndLeavesOutWhatIsNoOperator) {
  const auto event = [](const std::string& name, double ts, double dur, const std::string& cat) {
    return Json{{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 7}, {"tid", 7}, {"ts", ts}, {"dur", dur}};
  };
  Json events = Json::array();
  events.push_back(event("ProfilerStep#1", 0, 1000, "user_annotation"));
  events.push_back(event("nn.Module: Conv2d_0", 5, 200, "python_function"));
  events.push_back(event("aten::conv2d", 10, 100.5, "cpu_op"));
  events.push_back(event("aten::convolution", 11, 99, "cpu_op"));
  events.push_back(event("volta_sgemm_128x64", 20, 50, "kernel"));
  events.push_back(event("autograd::engine::evaluate_function: ConvolutionBackward0", 500, 300.25, "cpu_op"));
  const TraceProfile trace =
      profile_from_torch_trace(Json{{"traceEvents", events}}, "kineto.json", build_model("lenet"), 16, 1);
  EXPECT_DOUBLE_EQ(traced(trace, "conv1", ProfilePhase::kForward), 100.5e-6);
  EXPECT_DOUBLE_EQ(traced(trace, "conv2", ProfilePhase::kBackward), 300.25e-6)
      << "the backward runs last layer first: its first convolution is the last conv layer's";
  EXPECT_LT(traced(trace, "conv2", ProfilePhase::kForward), 0);
  EXPECT_EQ(trace.unmatched.size(), 2 * build_model("lenet").layers.size() - 2);
}

TEST(TorchTrace, RefusesWhatIsNoTraceOfTheModel) {
  const ModelSpec lenet = build_model("lenet");
  const auto message = [&](const Json& json, int threads = 1) {
    return testing::error_of<InputError>([&] { profile_from_torch_trace(json, "t.json", lenet, 16, threads); });
  };
  EXPECT_NE(message(Json{{"events", Json::array()}}).find("traceEvents"), std::string::npos);
  EXPECT_NE(message(Json::array({Json{{"ph", "X"}, {"name", "aten::relu"}, {"ts", 0}, {"dur", -5}}})).find("event 0"),
            std::string::npos);
  EXPECT_NE(message(Json::array({Json{{"ph", "X"}, {"name", "aten::add"}, {"ts", 0}, {"dur", 5}}})).find("no operator"),
            std::string::npos);
  EXPECT_NE(message(Json::array(), 0).find("CPU"), std::string::npos) << "a GPU trace is not read yet";
  const std::string escape = message(Json::array({Json{{"ph", "X"}, {"name", "\x1b[2J"}, {"ts", 0}, {"dur", -1}}}));
  EXPECT_EQ(escape.find('\x1b'), std::string::npos) << "a name from the file is not echoed raw: " << escape;
}

}  // namespace
}  // namespace dsgd::platforms
