#include "core/siphash.hpp"

#include <bit>
#include <cstring>

namespace dsgd {

namespace {

struct State {
  std::uint64_t v0, v1, v2, v3;

  void round() {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }

  void absorb(std::uint64_t word) {
    v3 ^= word;
    round();
    round();
    v0 ^= word;
  }
};

static_assert(std::endian::native == std::endian::little, "words are read little-endian");

}  // namespace

std::uint64_t siphash24(const SipHashKey& key, std::span<const std::byte> message) {
  State state{key.k0 ^ 0x736f6d6570736575ULL, key.k1 ^ 0x646f72616e646f6dULL, key.k0 ^ 0x6c7967656e657261ULL,
              key.k1 ^ 0x7465646279746573ULL};
  const std::size_t whole = message.size() / 8 * 8;
  for (std::size_t at = 0; at < whole; at += 8) {
    std::uint64_t word;
    std::memcpy(&word, message.data() + at, 8);
    state.absorb(word);
  }
  // The last word: the remaining bytes, and the message length's low byte on top.
  std::uint64_t last = 0;
  if (message.size() > whole) std::memcpy(&last, message.data() + whole, message.size() - whole);
  last |= static_cast<std::uint64_t>(message.size()) << 56;
  state.absorb(last);
  state.v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) state.round();
  return state.v0 ^ state.v1 ^ state.v2 ^ state.v3;
}

}  // namespace dsgd
