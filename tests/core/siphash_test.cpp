// core/siphash.hpp: SipHash-2-4 gives the reference implementation's outputs (the paper's Appendix A and the
// first vectors of its vectors.h, key 00 01 .. 0f, message 00 01 .. (n-1)), and every key bit changes the tag.

#include "core/siphash.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace dsgd {
namespace {

const SipHashKey kReferenceKey{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};

std::vector<std::byte> counting(std::size_t n) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(i);
  return bytes;
}

TEST(SipHash, MatchesTheReferenceVectors) {
  EXPECT_EQ(siphash24(kReferenceKey, counting(0)), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ(siphash24(kReferenceKey, counting(1)), 0x74f839c593dc67fdULL);
  EXPECT_EQ(siphash24(kReferenceKey, counting(8)), 0x93f5f5799a932462ULL);
  EXPECT_EQ(siphash24(kReferenceKey, counting(15)), 0xa129ca6149be45e5ULL);  // the paper's example
}

TEST(SipHash, EveryKeyBitChangesTheTag) {
  const auto message = counting(100);
  const std::uint64_t tag = siphash24(kReferenceKey, message);
  for (int bit = 0; bit < 128; ++bit) {
    SipHashKey key = kReferenceKey;
    (bit < 64 ? key.k0 : key.k1) ^= 1ULL << (bit % 64);
    EXPECT_NE(siphash24(key, message), tag) << "key bit " << bit;
  }
}

}  // namespace
}  // namespace dsgd
