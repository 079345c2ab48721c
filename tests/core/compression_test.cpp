// core/compression: the codecs on their own. Half precision round-trips every half and rounds floats to nearest
// even (checked against the compiler's _Float16 where it has one); 1-bit and top-k keep what they leave out in the
// residual (decoded + residual == gradient + old residual); top-k picks the k largest magnitudes, ties to the lower
// index.

#include "core/compression.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/error.hpp"

namespace dsgd {
namespace {

TEST(Half, EveryHalfRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    const float value = from_half(half);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(from_half(to_half(value)))) << std::hex << bits;
      continue;
    }
    EXPECT_EQ(to_half(value), half) << std::hex << bits;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(to_half(1.0F), 0x3C00);
  EXPECT_EQ(to_half(-2.0F), 0xC000);
  EXPECT_EQ(to_half(65504.0F), 0x7BFF);             // the largest half
  EXPECT_EQ(to_half(65519.0F), 0x7BFF);             // below the midpoint to 65536
  EXPECT_EQ(to_half(65520.0F), 0x7C00);             // the midpoint rounds to even: infinity
  EXPECT_EQ(to_half(0x1p-24F), 0x0001);             // the smallest subnormal
  EXPECT_EQ(to_half(0x1p-25F), 0x0000);             // half of it: ties to even, zero
  EXPECT_EQ(to_half(1.0F + 0x1p-11F), 0x3C00);      // tie between 1 and 1 + 2^-10: even, 1
  EXPECT_EQ(to_half(1.0F + 3 * 0x1p-11F), 0x3C02);  // tie between 1 + 2^-10 and 1 + 2^-9: even, the latter
  EXPECT_EQ(to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(from_half(0x3555), 0x1.554p-2F);  // 0.333251953125
  EXPECT_EQ(from_half(0x8001), -0x1p-24F);
}

#ifdef __FLT16_MAX__
TEST(Half, RoundsAsTheCompilersFloat16) {
  std::mt19937 random(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 1'000'000; ++i) {
    const float value = std::bit_cast<float>(bits(random));
    if (std::isnan(value)) continue;
    const auto expected = std::bit_cast<std::uint16_t>(static_cast<_Float16>(value));
    ASSERT_EQ(to_half(value), expected) << value;
  }
}
#endif

std::vector<float> random_floats(std::size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::vector<float> values(count);
  for (auto& value : values) value = normal(random);
  return values;
}

TEST(OneBit, ErrorFeedbackKeepsWhatTheBitsLeaveOut) {
  const std::vector<std::size_t> segments = {5, 100, 895};
  const auto gradient = random_floats(1000, 1);
  auto residual = random_floats(1000, 2);
  std::vector<float> input(1000);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = gradient[i] + residual[i];
  std::vector<std::byte> message(onebit_bytes(1000, segments.size()));
  EXPECT_EQ(message.size(), 3 * 8 + 125U);
  onebit_encode(gradient, residual, segments, message);
  std::vector<float> decoded(1000, 0.0F);
  onebit_decode_add(message, segments, decoded);
  for (std::size_t i = 0; i < input.size(); ++i) {
    EXPECT_NEAR(decoded[i] + residual[i], input[i], 1e-6F * (1 + std::fabs(input[i]))) << i;
  }
  // Two values per segment: the means of its non-negative and negative sums.
  std::size_t begin = 0;
  for (const std::size_t length : segments) {
    double positive = 0, negative = 0;
    int positives = 0, negatives = 0;
    for (std::size_t i = begin; i < begin + length; ++i) {
      if (input[i] >= 0) {
        positive += input[i];
        ++positives;
      } else {
        negative += input[i];
        ++negatives;
      }
    }
    for (std::size_t i = begin; i < begin + length; ++i) {
      const double expected = input[i] >= 0 ? positive / positives : negative / negatives;
      EXPECT_NEAR(decoded[i], expected, 1e-6) << i;
    }
    begin += length;
  }
}

TEST(OneBit, ExactOnDyadicValues) {
  // Means and errors of these are exact in float: the conservation holds bit for bit. Non-negative 1, 3, 0, 2
  // (mean 1.5), negative -2, -6, -0.5, -1.5 (mean -2.5).
  const std::vector<float> gradient = {1, 3, -2, -6, 0, -0.5F, 2, -1.5F};
  std::vector<float> residual(8, 0.0F);
  const std::vector<std::size_t> segments = {8};
  std::vector<std::byte> message(onebit_bytes(8, 1));
  ASSERT_EQ(message.size(), 8U + 1U);
  onebit_encode(gradient, residual, segments, message);
  std::vector<float> decoded(8, 0.0F);
  onebit_decode_add(message, segments, decoded);
  EXPECT_EQ(decoded, (std::vector<float>{1.5F, 1.5F, -2.5F, -2.5F, 1.5F, -2.5F, 1.5F, -2.5F}));
  const std::vector<float> left_out = {-0.5F, 1.5F, 0.5F, -3.5F, -1.5F, 2, 0.5F, 1};
  EXPECT_EQ(residual, left_out);
  // The next message carries what this one left out: with a zero gradient it encodes the residual alone.
  const std::vector<float> zero(8, 0.0F);
  onebit_encode(zero, residual, segments, message);
  std::vector<float> again(8, 0.0F);
  onebit_decode_add(message, segments, again);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(again[i] + residual[i], left_out[i]) << i;
}

TEST(TopK, CountRoundsUpAndStaysInRange) {
  EXPECT_EQ(topk_count(1000, 0.01), 10U);
  EXPECT_EQ(topk_count(1001, 0.01), 11U);
  EXPECT_EQ(topk_count(5, 0.01), 1U);
  EXPECT_EQ(topk_count(5, 1.0), 5U);
  EXPECT_EQ(topk_count(0, 0.5), 0U);
  EXPECT_EQ(topk_bytes(10), 80U);
  EXPECT_THROW(topk_count(10, 0.0), InternalError);
}

TEST(TopK, SelectsTheLargestMagnitudesAndKeepsTheRest) {
  const std::vector<float> gradient = {0.1F, -5, 3, 0.2F, -3, 4, 0, 3};
  std::vector<float> residual = {0, 0, 0, 0, 0, 0, 1, 0};  // 6 becomes 1: not among the largest
  const std::size_t k = 4;
  std::vector<std::byte> message(topk_bytes(k));
  topk_encode(gradient, residual, k, message);
  std::vector<float> decoded(8, 0.0F);
  topk_decode_add(message, k, decoded);
  // |values|: 5 (1), 4 (5), then 3 at 2, 4 and 7: ties to the lower index, so 2 and 4.
  EXPECT_EQ(decoded, (std::vector<float>{0, -5, 3, 0, -3, 4, 0, 0}));
  EXPECT_EQ(residual, (std::vector<float>{0.1F, 0, 0, 0.2F, 0, 0, 1, 3}));
}

TEST(TopK, ConservesAndPicksTheLargestOnRandomData) {
  const auto gradient = random_floats(5000, 3);
  auto residual = random_floats(5000, 4);
  std::vector<float> input(5000);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = gradient[i] + residual[i];
  const std::size_t k = topk_count(5000, 0.01);
  std::vector<std::byte> message(topk_bytes(k));
  topk_encode(gradient, residual, k, message);
  std::vector<float> decoded(5000, 0.0F);
  topk_decode_add(message, k, decoded);
  std::vector<float> magnitudes(5000);
  for (std::size_t i = 0; i < input.size(); ++i) magnitudes[i] = std::fabs(input[i]);
  std::nth_element(magnitudes.begin(), magnitudes.begin() + static_cast<std::ptrdiff_t>(k - 1), magnitudes.end(),
                   std::greater<>());
  const float kth = magnitudes[k - 1];
  std::size_t kept = 0;
  for (std::size_t i = 0; i < input.size(); ++i) {
    EXPECT_EQ(decoded[i] + residual[i], input[i]) << i;  // one of the two is zero: exact
    if (decoded[i] != 0) {
      ++kept;
      EXPECT_GE(std::fabs(decoded[i]), kth) << i;
    } else {
      EXPECT_LE(std::fabs(residual[i]), kth) << i;
    }
  }
  EXPECT_EQ(kept, k);
}

TEST(Compression, Names) {
  for (const auto compression : kCompressions) EXPECT_EQ(compression_from_string(to_string(compression)), compression);
  EXPECT_THROW(compression_from_string("zip"), UnknownNameError);
}

}  // namespace
}  // namespace dsgd
