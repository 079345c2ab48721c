#pragma once
// A library-independent, counter-based random source for the neural-network code: Xavier initialisation and
// dropout masks. std::uniform_real_distribution is implementation-defined, so it would give different weights on
// another standard library; these functions are fully specified here, so the same seed gives bit-identical
// numbers on every machine, compiler and back end (a CUDA kernel can compute the same values per element).

#include <cstdint>
#include <string_view>

namespace dsgd::nn {

// SplitMix64's finaliser (Steele, Lea, Flood 2014): a bijective mix of 64 bits, used as a hash of a counter.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The `index`-th draw of stream `stream`: independent of the order in which draws are made, so threads may make
// them in any order and still agree.
constexpr std::uint64_t random_bits(std::uint64_t stream, std::uint64_t index) {
  return mix64(mix64(stream) ^ mix64(index ^ 0xD1B54A32D192ED03ULL));
}

// Uniform in [0, 1) from the top 24 bits: exactly representable in float, no rounding up to 1.
constexpr float unit_float(std::uint64_t bits) { return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f); }

// FNV-1a of a name, to derive a per-layer stream from the seed (layer names are unique within a model).
constexpr std::uint64_t name_hash(std::string_view name) {
  std::uint64_t hash = 0xCBF29CE484222325ULL;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ULL;
  }
  return hash;
}

}  // namespace dsgd::nn
