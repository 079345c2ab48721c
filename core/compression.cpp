#include "core/compression.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/enum_names.hpp"

namespace dsgd {

namespace {

constexpr EnumNames<4> kCompressionNames = {"none", "fp16", "onebit", "topk"};  // Compression's order

// Little helpers for the unaligned message layouts.
void put_float(std::byte* at, float value) { std::memcpy(at, &value, sizeof value); }
float get_float(const std::byte* at) {
  float value = 0;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace

std::string_view to_string(Compression compression) { return name_of(compression, kCompressionNames); }

Compression compression_from_string(std::string_view name) {
  return from_name<Compression>("compression", name, kCompressionNames);
}

std::uint16_t to_half(float value) {
  // After Fabian Giesen's float_to_half_fast3_rtne: normal halves round by integer arithmetic on the float's bits,
  // subnormal ones by one float addition that aligns the 10 mantissa bits at the bottom (round to nearest even, the
  // FPU's mode).
  constexpr std::uint32_t kInfinity = 255U << 23;
  constexpr std::uint32_t kHalfOverflow = (127U + 16U) << 23;  // 65536: from here on, infinity
  constexpr std::uint32_t kSmallestNormalHalf = 113U << 23;    // 2^-14
  constexpr std::uint32_t kDenormMagic = ((127U - 15U) + (23U - 10U) + 1U) << 23;
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = bits & 0x80000000U;
  bits ^= sign;
  std::uint32_t half = 0;
  if (bits >= kHalfOverflow) {
    half = bits > kInfinity ? 0x7E00U : 0x7C00U;  // NaN stays (a quiet) NaN, the rest is infinity
  } else if (bits < kSmallestNormalHalf) {
    const float aligned = std::bit_cast<float>(bits) + std::bit_cast<float>(kDenormMagic);
    half = std::bit_cast<std::uint32_t>(aligned) - kDenormMagic;
  } else {
    const std::uint32_t odd = (bits >> 13) & 1U;
    bits += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xFFFU + odd;  // rebias, round half to even
    half = bits >> 13;                                                    // a carry into infinity is right
  }
  return static_cast<std::uint16_t>(half | (sign >> 16));
}

float from_half(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000U) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1FU;
  const std::uint32_t mantissa = half & 0x3FFU;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24F;  // subnormal or zero: exact
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000U | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112U) << 23) | (mantissa << 13));
}

std::size_t onebit_bytes(std::size_t count, std::size_t segments) {
  return segments * 2 * sizeof(float) + (count + 7) / 8;
}

void onebit_encode(std::span<const float> gradient, std::span<float> residual,
                   std::span<const std::size_t> segment_lengths, std::span<std::byte> message) {
  const std::size_t count = gradient.size();
  DSGD_ENFORCE_EQ(residual.size(), count);
  DSGD_ENFORCE_EQ(message.size(), onebit_bytes(count, segment_lengths.size()));
  DSGD_ENFORCE_EQ(std::accumulate(segment_lengths.begin(), segment_lengths.end(), std::size_t{0}), count);
  std::byte* scales = message.data();
  std::byte* bits = message.data() + segment_lengths.size() * 2 * sizeof(float);
  std::fill(bits, message.data() + message.size(), std::byte{0});
  std::size_t begin = 0;
  for (std::size_t s = 0; s < segment_lengths.size(); ++s) {
    const std::size_t end = begin + segment_lengths[s];
    // The sums to send, and the means of each sign (in double: a layer has up to millions of elements).
    double positive_sum = 0;
    double negative_sum = 0;
    std::size_t positives = 0;
    for (std::size_t i = begin; i < end; ++i) {
      residual[i] += gradient[i];
      if (residual[i] >= 0) {
        positive_sum += residual[i];
        ++positives;
      } else {
        negative_sum += residual[i];
      }
    }
    const std::size_t negatives = (end - begin) - positives;
    const float positive = positives > 0 ? static_cast<float>(positive_sum / static_cast<double>(positives)) : 0.0F;
    const float negative = negatives > 0 ? static_cast<float>(negative_sum / static_cast<double>(negatives)) : 0.0F;
    put_float(scales + s * 2 * sizeof(float), positive);
    put_float(scales + s * 2 * sizeof(float) + sizeof(float), negative);
    for (std::size_t i = begin; i < end; ++i) {
      const bool set = residual[i] >= 0;
      if (set) bits[i / 8] |= std::byte{1} << (i % 8);
      residual[i] -= set ? positive : negative;  // the error this message leaves for the next
    }
    begin = end;
  }
}

void onebit_decode_add(std::span<const std::byte> message, std::span<const std::size_t> segment_lengths,
                       std::span<float> sum) {
  DSGD_ENFORCE_EQ(message.size(), onebit_bytes(sum.size(), segment_lengths.size()));
  const std::byte* scales = message.data();
  const std::byte* bits = message.data() + segment_lengths.size() * 2 * sizeof(float);
  std::size_t begin = 0;
  for (std::size_t s = 0; s < segment_lengths.size(); ++s) {
    const float positive = get_float(scales + s * 2 * sizeof(float));
    const float negative = get_float(scales + s * 2 * sizeof(float) + sizeof(float));
    const std::size_t end = begin + segment_lengths[s];
    for (std::size_t i = begin; i < end; ++i) {
      const bool set = (bits[i / 8] & (std::byte{1} << (i % 8))) != std::byte{0};
      sum[i] += set ? positive : negative;
    }
    begin = end;
  }
}

std::size_t topk_count(std::size_t count, double ratio) {
  DSGD_ENFORCE(ratio > 0 && ratio <= 1, "top-k ratio outside (0, 1]");
  if (count == 0) return 0;
  const auto k = static_cast<std::size_t>(std::ceil(ratio * static_cast<double>(count)));
  return std::clamp<std::size_t>(k, 1, count);
}

std::size_t topk_bytes(std::size_t k) { return k * (sizeof(std::uint32_t) + sizeof(float)); }

void topk_encode(std::span<const float> gradient, std::span<float> residual, std::size_t k,
                 std::span<std::byte> message) {
  const std::size_t count = gradient.size();
  DSGD_ENFORCE_EQ(residual.size(), count);
  DSGD_ENFORCE_LE(k, count);
  DSGD_ENFORCE_EQ(message.size(), topk_bytes(k));
  DSGD_ENFORCE(count <= std::numeric_limits<std::uint32_t>::max(), "top-k indices are 32-bit");
  for (std::size_t i = 0; i < count; ++i) residual[i] += gradient[i];
  std::vector<std::uint32_t> order(count);
  std::iota(order.begin(), order.end(), 0U);
  // A strict total order (magnitude down, then index up): the k chosen do not depend on the algorithm's pivots.
  const auto before = [&residual](std::uint32_t a, std::uint32_t b) {
    const float x = std::fabs(residual[a]);
    const float y = std::fabs(residual[b]);
    return x > y || (x == y && a < b);
  };
  if (k < count) std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), before);
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
  std::byte* values = message.data() + k * sizeof(std::uint32_t);
  for (std::size_t j = 0; j < k; ++j) {
    const std::uint32_t index = order[j];
    std::memcpy(message.data() + j * sizeof(std::uint32_t), &index, sizeof index);
    put_float(values + j * sizeof(float), residual[index]);
    residual[index] = 0;
  }
}

void topk_decode_add(std::span<const std::byte> message, std::size_t k, std::span<float> sum) {
  DSGD_ENFORCE_EQ(message.size(), topk_bytes(k));
  const std::byte* values = message.data() + k * sizeof(std::uint32_t);
  for (std::size_t j = 0; j < k; ++j) {
    std::uint32_t index = 0;
    std::memcpy(&index, message.data() + j * sizeof(std::uint32_t), sizeof index);
    DSGD_ENFORCE_LT(static_cast<std::size_t>(index), sum.size());
    sum[index] += get_float(values + j * sizeof(float));
  }
}

}  // namespace dsgd
