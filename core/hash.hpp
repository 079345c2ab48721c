#pragma once
// FNV-1a (64 bits) of a byte range: the weights hash of results (equal hashes, bit-identical weights).

#include <cstddef>
#include <cstdint>

namespace dsgd {

inline std::uint64_t fnv1a(const void* data, std::size_t bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ULL;
  return hash;
}

}  // namespace dsgd
