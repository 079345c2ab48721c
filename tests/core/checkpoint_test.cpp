// core/checkpoint.hpp: a checkpoint file comes back as written, and every kind of damage -- no magic, another format
// version, truncation anywhere, bytes appended, one flipped bit -- is refused with a one-line InputError naming the
// file and what is wrong; identities are compared field by field, naming the first that differs.
#include "core/checkpoint.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "core/model_zoo.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd {
namespace {

using dsgd::testing::input_error;
using CoreCheckpoint = dsgd::testing::ScratchDirTest;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Checkpoint sample() {
  Checkpoint checkpoint;
  checkpoint.identity = {{"command", "run"}, {"workers", "3"}, {"lr", "0.01"}};
  checkpoint.iteration = 40;
  ByteWriter state;
  const float weights[] = {1.5F, -2.25F, 0.0F};
  state.floats(weights);
  state.i64(-7);
  state.text("centre");
  state.f64(0.125);
  checkpoint.sections["rank 0"] = state.take();
  checkpoint.sections["history"] = std::string("\0\1\2", 3);
  return checkpoint;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST_F(CoreCheckpoint, ComesBackAsWritten) {
  const auto file = dir_ / "sub" / "run.ckpt";
  write_checkpoint(file, sample());
  const Checkpoint back = read_checkpoint(file);
  EXPECT_EQ(back.identity, sample().identity);
  EXPECT_EQ(back.iteration, 40);
  EXPECT_EQ(back.sections, sample().sections);
  ByteReader state(back.sections.at("rank 0"), "rank 0");
  float weights[3] = {};
  state.floats(weights);
  EXPECT_EQ(weights[1], -2.25F);
  EXPECT_EQ(state.i64(), -7);
  EXPECT_EQ(state.text(), "centre");
  EXPECT_EQ(state.f64(), 0.125);
  EXPECT_TRUE(state.done());
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ / "sub"), {}), 1);
}

TEST_F(CoreCheckpoint, DamageIsRefusedNamingTheFileAndWhat) {
  const auto file = dir_ / "run.ckpt";
  write_checkpoint(file, sample());
  const std::string good = slurp(file);
  const auto refused = [&](const std::string& bytes) {
    spit(file, bytes);
    return input_error([&] { read_checkpoint(file); });
  };
  std::string message = refused("{\"benchmarks\": []}");
  EXPECT_TRUE(contains(message, "checkpoint " + file.string() + ": not a dsgd checkpoint")) << message;
  EXPECT_TRUE(contains(refused(""), "truncated: 0 bytes"));
  // Cut anywhere: after the magic, inside the header, inside the payload, before the last byte of the CRC.
  for (const std::size_t keep : {8UL, 15UL, good.size() / 2, good.size() - 1}) {
    message = refused(good.substr(0, keep));
    EXPECT_TRUE(contains(message, "truncated")) << keep << ": " << message;
  }
  EXPECT_TRUE(contains(refused(good + "x"), "has bytes after its end")) << refused(good + "x");
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  message = refused(flipped);
  EXPECT_TRUE(contains(message, "checksum mismatch")) << message;
  std::string version = good;
  version[8] = 9;
  message = refused(version);
  EXPECT_TRUE(contains(message, "format version 9; this dsgd reads version 1")) << message;
}

TEST_F(CoreCheckpoint, IdentitiesDifferAtTheFirstFieldThatDiffers) {
  const Identity stored = sample().identity;
  const auto file = dir_ / "run.ckpt";
  EXPECT_NO_THROW(check_identity(file, stored, stored));
  EXPECT_NO_THROW(check_identity(file, stored, {{"workers", "3"}}));  // a part of it
  const std::string message = input_error([&] {
    check_identity(file, stored, {{"command", "run"}, {"workers", "4"}, {"lr", "0.02"}});
  });
  EXPECT_EQ(message, "checkpoint " + file.string() + " does not match this run: workers is 3 there, 4 here");
  EXPECT_TRUE(contains(input_error([&] { check_identity(file, stored, {{"seed", "1"}}); }), "it has no seed"));
}

TEST(CoreCheckpointModels, LayersWithStateAcrossBatchesAreRefused) {
  EXPECT_NO_THROW(check_checkpointable(build_model("lenet")));
  const std::string message = input_error([] { check_checkpointable(build_model("alexnet")); });
  EXPECT_TRUE(contains(message, "dropout")) << message;
}

TEST(CoreCheckpointBytes, AReaderRefusesWhatItDoesNotHold) {
  ByteWriter out;
  const float three[] = {1, 2, 3};
  out.floats(three);
  const std::string bytes = out.take();
  ByteReader reader(bytes, "f rank 1");
  float two[2] = {};
  EXPECT_TRUE(contains(input_error([&] { reader.floats(two); }), "holds 3 floats where 2 were expected"));
  ByteReader short_reader(std::string_view(bytes).substr(0, 10), "f rank 1");
  float all[3] = {};
  EXPECT_TRUE(contains(input_error([&] { short_reader.floats(all); }), "checkpoint f rank 1: ends early"));
}

TEST(CoreCheckpointBytes, NonFiniteWeightsAreRefused) {
  // The probe of issue 42: a checkpoint of NaN weights (CRC recomputed) was resumed, trained on at 9.7% accuracy
  // and written back, exit 0.
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    ByteWriter out;
    const float weights[] = {0.5F, bad, 1.0F, bad};
    out.floats(weights);
    const std::string bytes = out.take();
    ByteReader reader(bytes, "c.ckpt rank 0");
    float back[4] = {};
    const std::string message = input_error([&] { reader.floats(back); });
    EXPECT_TRUE(contains(message, "checkpoint c.ckpt rank 0: 2 of 4 floats are not finite (the first at 1)"))
        << message;
  }
}

}  // namespace
}  // namespace dsgd
