// core/compressed_collectives on real executors: fp16 sums small integers exactly and every rank gets the same bits;
// onebit and topk give exactly the serial decode of every rank's encoded gradient, with the residuals the codecs
// leave; each rank's bytes on the wire (Comm::bytes_sent) are the compressed sizes; the threads executor and SimGrid
// with payloads give the same bits.

#include "core/compressed_collectives.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "measure/threads/executor.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd {
namespace {

constexpr std::size_t kCount = 1001;

// One distinct value per (rank, index), deterministic. `integers`: small integers (exact in half, sums exact).
float input(int rank, std::size_t index, bool integers) {
  if (integers) return static_cast<float>(static_cast<int>((index * 7 + static_cast<std::size_t>(rank) * 3) % 11) - 5);
  const std::uint64_t mixed =
      (index + 1) * 0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(rank + 1) * 0xBF58476D1CE4E5B9ULL;
  return static_cast<float>(static_cast<double>(mixed >> 11) / 9007199254740992.0 - 0.5);  // in [-0.5, 0.5)
}

struct RankOutcome {
  std::vector<float> sum;
  std::vector<float> residual;
  std::uint64_t bytes_sent = 0;
};

CompressionOptions options_for(Compression kind) {
  return compression_options(
      kind, 0.05,
      kind == Compression::kOneBit ? std::vector<std::size_t>{1, 500, kCount - 501} : std::vector<std::size_t>{});
}

// The worker that runs the compressed allreduce of input() (with a residual of input(rank + 100)) on each rank and
// keeps what it got in `outcomes` (one per rank).
WorkerFunction allreduce_worker(std::vector<RankOutcome>& outcomes, Compression kind, bool integers) {
  return [&outcomes, kind, integers](Comm& comm) {
    RankOutcome& mine = outcomes[static_cast<std::size_t>(comm.rank())];
    mine.sum.resize(kCount);
    mine.residual.resize(kCount);
    for (std::size_t i = 0; i < kCount; ++i) {
      mine.sum[i] = input(comm.rank(), i, integers);
      mine.residual[i] = input(comm.rank() + 100, i, integers);
    }
    compressed_allreduce(comm, {mine.sum.data(), kCount}, {mine.residual.data(), kCount}, options_for(kind));
    mine.bytes_sent = comm.bytes_sent();
  };
}

std::vector<RankOutcome> on_threads(int ranks, Compression kind, bool integers) {
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(ranks));
  WorldOptions world;
  world.size = ranks;
  measure::threads::run(world, allreduce_worker(outcomes, kind, integers));
  return outcomes;
}

std::string bits_of(const std::vector<float>& values) {
  std::string bits(values.size() * sizeof(float), '\0');
  std::memcpy(bits.data(), values.data(), bits.size());
  return bits;
}

// Every rank's sum and residual, as bytes.
std::string bits_of(const std::vector<RankOutcome>& outcomes) {
  std::string bits;
  for (const auto& outcome : outcomes) bits += bits_of(outcome.sum) + bits_of(outcome.residual);
  return bits;
}

class CompressedAllreduce : public ::testing::TestWithParam<Compression> {};

TEST_P(CompressedAllreduce, EveryRankGetsTheSameBitsAndTheCompressedBytes) {
  const Compression kind = GetParam();
  const auto options = options_for(kind);
  for (const int ranks : {1, 2, 3, 5}) {
    const auto outcomes = on_threads(ranks, kind, /*integers=*/false);
    for (const auto& outcome : outcomes) {
      EXPECT_EQ(bits_of(outcome.sum), bits_of(outcomes[0].sum)) << to_string(kind) << ", " << ranks << " ranks";
    }
    const auto p = static_cast<std::size_t>(ranks);
    for (int rank = 0; rank < ranks; ++rank) {
      std::uint64_t expected = 0;
      if (kind == Compression::kFp16) {
        // The ring sends every chunk but one in each phase: 2 (count - one chunk) halves.
        const auto chunk = [&](std::size_t c) { return kCount * (c + 1) / p - kCount * c / p; };
        const auto r = static_cast<std::size_t>(rank);
        expected = ranks > 1 ? 2 * (2 * kCount - chunk((r + 1) % p) - chunk((r + 2) % p)) : 0;
      } else {
        expected = (p - 1) * compressed_bytes(options, kCount);  // the allgather forwards P - 1 messages
      }
      EXPECT_EQ(outcomes[static_cast<std::size_t>(rank)].bytes_sent, expected)
          << to_string(kind) << ", rank " << rank << " of " << ranks;
    }
  }
}

TEST_P(CompressedAllreduce, SameBitsInSimgridAsOnThreads) {
  const Compression kind = GetParam();
  const int ranks = 3;
  const std::string expected = bits_of(on_threads(ranks, kind, /*integers=*/false));
  // The outcomes live in the forked simulation: collect() sends their bits back.
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(ranks));
  WorldOptions world;
  world.size = ranks;
  simulate::SimulationOptions options;
  options.fidelity = simulate::Fidelity::kMessage;
  options.collect = [&outcomes] { return bits_of(outcomes); };
  const std::string simulated = simulate::simgrid::run(simulate::flat_platform(ranks, 1e-6, 1e9, 1e12), world,
                                                       allreduce_worker(outcomes, kind, false), options)
                                    .collected;
  EXPECT_EQ(simulated.size(), expected.size());
  EXPECT_TRUE(simulated == expected) << to_string(kind) << ": SimGrid's sums or residuals differ from the threads'";
}

INSTANTIATE_TEST_SUITE_P(Kinds, CompressedAllreduce,
                         ::testing::Values(Compression::kFp16, Compression::kOneBit, Compression::kTopK),
                         [](const auto& param_info) { return std::string(to_string(param_info.param)); });

TEST(CompressedAllreduceFp16, SumsSmallIntegersExactly) {
  for (const int ranks : {2, 3, 4, 7}) {
    const auto outcomes = on_threads(ranks, Compression::kFp16, /*integers=*/true);
    for (std::size_t i = 0; i < kCount; ++i) {
      float expected = 0;
      for (int rank = 0; rank < ranks; ++rank) expected += input(rank, i, true);
      ASSERT_EQ(outcomes[0].sum[i], expected) << ranks << " ranks, element " << i;
    }
  }
}

TEST(CompressedAllreduceFp16, WithinHalfPrecisionOfTheFloatSum) {
  const int ranks = 4;
  const auto outcomes = on_threads(ranks, Compression::kFp16, /*integers=*/false);
  for (std::size_t i = 0; i < kCount; ++i) {
    double exact = 0;
    for (int rank = 0; rank < ranks; ++rank) exact += input(rank, i, false);
    // Up to P roundings to half (relative 2^-11 each) of partial sums of at most P x 0.5.
    EXPECT_NEAR(outcomes[0].sum[i], exact, ranks * ranks * 0.5 * 0x1p-11) << i;
  }
}

TEST(CompressedAllreduceErrorFeedback, IsTheSerialDecodeOfEveryRanksMessage) {
  for (const Compression kind : {Compression::kOneBit, Compression::kTopK}) {
    const auto options = options_for(kind);
    for (const int ranks : {2, 3, 5}) {
      const auto outcomes = on_threads(ranks, kind, /*integers=*/false);
      std::vector<float> expected(kCount, 0.0F);
      for (int rank = 0; rank < ranks; ++rank) {
        std::vector<float> gradient(kCount);
        std::vector<float> residual(kCount);
        for (std::size_t i = 0; i < kCount; ++i) {
          gradient[i] = input(rank, i, false);
          residual[i] = input(rank + 100, i, false);
        }
        std::vector<std::byte> message(compressed_bytes(options, kCount));
        if (kind == Compression::kOneBit) {
          onebit_encode(gradient, residual, options.segments, message);
          onebit_decode_add(message, options.segments, expected);
        } else {
          const std::size_t k = topk_count(kCount, options.topk_ratio);
          topk_encode(gradient, residual, k, message);
          topk_decode_add(message, k, expected);
        }
        EXPECT_EQ(bits_of(outcomes[static_cast<std::size_t>(rank)].residual), bits_of(residual))
            << to_string(kind) << ", rank " << rank;
      }
      EXPECT_EQ(bits_of(outcomes[0].sum), bits_of(expected)) << to_string(kind) << ", " << ranks << " ranks";
    }
  }
}

TEST(CompressedAllreduce, OneRankLeavesEverythingAsItWas) {
  for (const Compression kind : {Compression::kFp16, Compression::kOneBit, Compression::kTopK}) {
    const auto outcomes = on_threads(1, kind, /*integers=*/false);
    for (std::size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(outcomes[0].sum[i], input(0, i, false)) << to_string(kind);
      ASSERT_EQ(outcomes[0].residual[i], input(100, i, false)) << to_string(kind);
    }
  }
}

TEST(CompressedAllreduce, RefusesBadOptions) {
  WorldOptions world;
  world.size = 2;
  const auto run_with = [&](CompressionOptions options) {
    measure::threads::run(world, [&](Comm& comm) {
      std::vector<float> buffer(10, 1.0F);
      std::vector<float> residual(10, 0.0F);
      compressed_allreduce(comm, {buffer.data(), 10}, {residual.data(), 10}, options);
    });
  };
  EXPECT_THROW(run_with(compression_options(Compression::kTopK, 0.0)), InputError);
  EXPECT_THROW(run_with(compression_options(Compression::kTopK, 1.5)), InputError);
  EXPECT_THROW(run_with(compression_options(Compression::kOneBit, 0.01, {3, 3})), InputError);
}

}  // namespace
}  // namespace dsgd
