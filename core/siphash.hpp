#pragma once
// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit pseudo-random function, used as the message
// authentication tag of Dogwild's datagrams (core/datagram.hpp; docs/dogwild.md "Threat model"). With a secret
// 128-bit key, forging a tag for a new message takes about 2^64 tries.

#include <cstddef>
#include <cstdint>
#include <span>

namespace dsgd {

struct SipHashKey {
  std::uint64_t k0 = 0;  // key bytes 0-7, little-endian
  std::uint64_t k1 = 0;  // key bytes 8-15
};

std::uint64_t siphash24(const SipHashKey& key, std::span<const std::byte> message);

}  // namespace dsgd
