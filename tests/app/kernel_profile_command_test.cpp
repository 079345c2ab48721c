// `dsgd calibrate --layers` (this machine's per-layer kernel times, or a PyTorch profiler trace's) and `dsgd
// simulate --kernel-profile`: the profile written, read back, and pricing the kernels it covers, which the
// simulation says. `dsgd bench layers`: the kernel model held against those times, one point FITTED.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/atomic_file.hpp"
#include "core/json.hpp"
#include "core/model_zoo.hpp"
#include "platforms/kernel_profile.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::testing {
namespace {

namespace fs = std::filesystem;

class KernelProfileCommand : public CliScratchTest {
 protected:
  // minimal.json with one-core nodes: a rank is one core, as the profile's one thread.
  std::string one_core_platform() {
    Json json = read_json_file(std::string(DSGD_TEST_DATA_DIR) + "/platforms/minimal.json");
    json["nodes"]["cpu"]["cores_per_socket"] = 1;
    json["nodes"]["cpu"]["peak_flops"] = 64e9;
    const fs::path path = dir_ / "one-core.json";
    write_file_atomically(path, json.dump());
    return path.string();
  }
};

TEST_F(KernelProfileCommand, MeasuresEveryLayerAtEachBatchAndTheSimulationUsesIt) {
  const std::string profile_path = (dir_ / "lenet.json").string();
  const auto measured = dsgd({"calibrate", "--layers", profile_path, "--layer-models", "lenet", "--layer-batches",
                              "1,4", "--layer-threads", "1", "--layer-repetitions", "2"});
  ASSERT_EQ(measured.code, 0) << measured.err;
  const auto profile = platforms::load_kernel_profile(profile_path);
  for (const LayerSpec& layer : build_model("lenet").layers) {
    for (const auto phase : {platforms::ProfilePhase::kForward, platforms::ProfilePhase::kBackward}) {
      const platforms::ProfileKey key{"lenet", layer.name, phase, 1};
      EXPECT_TRUE(profile.seconds(key, 1) && profile.seconds(key, 4)) << layer.name << " " << to_string(phase);
    }
  }
  EXPECT_TRUE(contains(profile.source, "measured by dsgd calibrate --layers")) << profile.source;

  const auto simulated =
      dsgd({"simulate", "--platform", one_core_platform(), "--algo", "sync-sgd", "--model", "lenet", "--batch", "4",
            "--workers", "1,2", "--iterations", "2", "--kernel-profile", profile_path});
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_TRUE(contains(simulated.err, "from the kernel profile")) << simulated.err;
  EXPECT_FALSE(contains(simulated.err, "at their class's rate")) << "every kernel covered: " << simulated.err;
  const auto at_batch_8 =
      dsgd({"simulate", "--platform", one_core_platform(), "--algo", "sync-sgd", "--model", "lenet", "--batch", "8",
            "--workers", "1", "--iterations", "2", "--kernel-profile", profile_path});
  ASSERT_EQ(at_batch_8.code, 0) << at_batch_8.err;
  EXPECT_TRUE(contains(at_batch_8.err, "at their class's rate")) << "beyond the measured batches: " << at_batch_8.err;
}

TEST_F(KernelProfileCommand, ReadsAPyTorchTraceIntoAProfile) {
  const std::string profile_path = (dir_ / "torch.json").string();
  const auto read = dsgd({"calibrate", "--layers", profile_path, "--torch-trace",
                          std::string(DSGD_TEST_DATA_DIR) + "/torch_trace_lenet_b16.json", "--layer-models", "lenet",
                          "--layer-batches", "16", "--layer-threads", "1"});
  ASSERT_EQ(read.code, 0) << read.err;
  EXPECT_TRUE(contains(read.out, "16 kernels")) << read.out;
  const auto simulated =
      dsgd({"simulate", "--platform", one_core_platform(), "--algo", "sync-sgd", "--model", "lenet", "--batch", "16",
            "--workers", "1", "--iterations", "2", "--kernel-profile", profile_path});
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_TRUE(contains(simulated.err, "from the kernel profile")) << simulated.err;
}

TEST_F(KernelProfileCommand, RefusesOptionsThatDoNotGoTogether) {
  const std::string trace = std::string(DSGD_TEST_DATA_DIR) + "/torch_trace_lenet_b16.json";
  const auto no_out = dsgd({"calibrate", "--torch-trace", trace});
  EXPECT_NE(no_out.code, 0);
  EXPECT_TRUE(contains(no_out.err, "--layers")) << no_out.err;
  const auto two_batches = dsgd({"calibrate", "--layers", (dir_ / "p.json").string(), "--torch-trace", trace,
                                 "--layer-batches", "16,32", "--layer-threads", "1"});
  EXPECT_NE(two_batches.code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "p.json")) << "nothing half-written";
  const auto study = dsgd({"simulate", "--study", "table4", "--kernel-profile", trace});
  EXPECT_NE(study.code, 0);
  EXPECT_TRUE(contains(study.err, "--kernel-profile is not used by --study")) << study.err;
  const auto too_many_threads = dsgd({"calibrate", "--layers", (dir_ / "q.json").string(), "--layer-threads", "4096"});
  EXPECT_NE(too_many_threads.code, 0);
  EXPECT_TRUE(contains(too_many_threads.err, "processors")) << too_many_threads.err;
}

// A numeric simulation (`dsgd run --executor simgrid`) prices its kernels from the profile: with every lenet kernel
// 1 ms slower, a one-worker iteration takes 16 ms more (8 layers forward and backward).
TEST_F(KernelProfileCommand, ANumericSimulationPricesItsKernelsFromTheProfile) {
  write_synthetic_idx_folder(dir_, 128, 32);
  const auto profile_of = [&](double seconds, const std::string& name) {
    platforms::KernelProfile profile;
    profile.device = "test";
    profile.source = "test: every kernel " + std::to_string(seconds) + " s";
    for (const LayerSpec& layer : build_model("lenet").layers) {
      for (const auto phase : {platforms::ProfilePhase::kForward, platforms::ProfilePhase::kBackward}) {
        profile.add({"lenet", layer.name, phase, 1}, 16, seconds);
      }
    }
    const fs::path path = dir_ / name;
    write_file_atomically(path, platforms::to_json(profile).dump());
    return path.string();
  };
  const auto seconds_per_iteration = [&](const std::string& profile) {
    const std::string results = (dir_ / "run.json").string();
    const auto outcome = dsgd({"run",
                               "--executor",
                               "simgrid",
                               "--platform",
                               one_core_platform(),
                               "--algo",
                               "sync-sgd",
                               "--workers",
                               "1",
                               "--model",
                               "lenet",
                               "--batch",
                               "16",
                               "--iterations",
                               "4",
                               "--data",
                               "idx:" + dir_.string(),
                               "--kernel-profile",
                               profile,
                               "--results",
                               results});
    EXPECT_EQ(outcome.code, 0) << outcome.err;
    const Json entry = read_json_file(results).at("benchmarks").at(0);
    return entry.at("real_time").get<double>() / entry.at("iterations").get<double>();
  };
  const double fast = seconds_per_iteration(profile_of(1e-3, "fast.json"));
  const double slow = seconds_per_iteration(profile_of(2e-3, "slow.json"));
  EXPECT_NEAR(slow - fast, 16e-3, 16e-3 * 0.01);
  const auto native = dsgd({"run", "--executor", "threads", "--workers", "1", "--iterations", "2", "--data",
                            "idx:" + dir_.string(), "--kernel-profile", profile_of(1e-3, "p.json")});
  EXPECT_NE(native.code, 0);
  EXPECT_TRUE(contains(native.err, "use it with --executor simgrid")) << native.err;
}

TEST_F(KernelProfileCommand, BenchLayersPredictsEveryPointButTheFittedOne) {
  const std::string results = (dir_ / "layers.json").string();
  const auto outcome = dsgd({"bench", "layers", "--batches", "1,4", "--threads", "1", "--repetitions", "2", "--fit",
                             "lenet/conv2/backward/4/1", "--results", results});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "FITTED")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "model against measured:")) << outcome.out;
  const Json json = read_json_file(results);
  int points = 0;
  int fitted = 0;
  for (const Json& entry : json.at("benchmarks")) {
    const Json& labels = entry.at("labels");
    if (labels.at("kind") == "point") {
      ++points;
      fitted += labels.at("determined") == "FITTED" ? 1 : 0;
      EXPECT_GT(entry.at("predicted_ms").get<double>(), 0);
    }
    if (labels.at("kind") == "summary") {
      EXPECT_EQ(entry.at("rows").get<double>(), 2 * 2 * 8 - 1) << "every point but the fitted one";
      EXPECT_EQ(labels.at("fitted_on"), "lenet/conv2/backward/4/1");
    }
  }
  EXPECT_EQ(points, 2 * 2 * 8) << "8 layers x forward, backward x 2 batches";
  EXPECT_EQ(fitted, 1);
}

TEST_F(KernelProfileCommand, BenchLayersRefusesAFitPointItCannotUse) {
  const auto malformed = dsgd({"bench", "layers", "--fit", "lenet/conv2/backward"});
  EXPECT_NE(malformed.code, 0);
  EXPECT_TRUE(contains(malformed.err, "MODEL/LAYER/PHASE/BATCH/THREADS")) << malformed.err;
  const auto phase = dsgd({"bench", "layers", "--fit", "lenet/conv2/sideways/64/1"});
  EXPECT_NE(phase.code, 0);
  EXPECT_TRUE(contains(phase.err, "backward-weights")) << phase.err;
}

}  // namespace
}  // namespace dsgd::testing
