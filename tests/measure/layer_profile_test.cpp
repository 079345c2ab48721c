// measure/layer_profile: every layer of a model timed forward and backward at each batch and thread count, on the
// CPU back end; options it cannot honour refused before anything runs.
#include "measure/layer_profile.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"
#include "core/model_zoo.hpp"

namespace dsgd::measure {
namespace {

using platforms::ProfileKey;
using platforms::ProfilePhase;

TEST(LayerProfile, TimesEveryLayerForwardAndBackwardAtEachBatch) {
  LayerProfileOptions options;
  options.batches = {1, 8};
  options.threads = {1};
  options.repetitions = 2;
  options.warmup = 1;
  std::ostringstream progress;
  const LayerProfile measured = measure_layer_profile(options, "test host", progress);
  const ModelSpec lenet = build_model("lenet");
  EXPECT_EQ(measured.profile.kernels().size(), 2 * lenet.layers.size());
  for (const LayerSpec& layer : lenet.layers) {
    for (const auto phase : {ProfilePhase::kForward, ProfilePhase::kBackward}) {
      const auto& points = measured.profile.kernels().at(ProfileKey{"lenet", layer.name, phase, 1});
      ASSERT_EQ(points.size(), 2u) << layer.name;
      EXPECT_GT(points[0].seconds, 0);
    }
  }
  // conv2's forward does 8x the work at batch 8: whatever the machine's load, it takes longer than at batch 1.
  const auto& conv2 = measured.profile.kernels().at(ProfileKey{"lenet", "conv2", ProfilePhase::kForward, 1});
  EXPECT_GT(conv2[1].seconds, conv2[0].seconds);
  EXPECT_NE(measured.profile.source.find("test host"), std::string::npos);
  EXPECT_NE(progress.str().find("batch 8, 1 thread"), std::string::npos) << progress.str();
}

TEST(LayerProfile, RefusesWhatItCannotMeasure) {
  std::ostringstream progress;
  const auto refuses = [&](LayerProfileOptions options) {
    EXPECT_THROW(measure_layer_profile(options, "h", progress), InputError);
  };
  refuses({.models = {"no-such-model"}});
  refuses({.batches = {0}});
  refuses({.threads = {100000}});
  refuses({.repetitions = 0});
  refuses({.models = {}});
  EXPECT_TRUE(progress.str().empty()) << "nothing ran: " << progress.str();
}

}  // namespace
}  // namespace dsgd::measure
