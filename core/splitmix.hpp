#pragma once
// SplitMix64's finaliser (Steele, Lea and Flood 2014): spreads a counter or a (seed, index) mix into 64 well-mixed
// bits, so neighbouring seeds give unrelated values. Used where a value must depend only on its inputs, not on the
// order of calls (batch orders per epoch, compute noise per node and step).

#include <cstdint>

namespace dsgd {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace dsgd
