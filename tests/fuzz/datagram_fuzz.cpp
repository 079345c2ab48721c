// Dogwild's datagram decoder and sequence ledger (core/datagram.hpp) from hostile bytes, as a local attacker would
// send them to a rank's UDP port. The input: a flags byte, a little-endian u16 receiver buffer in floats, then
// records of a u16 length and that many bytes, each a datagram. Flag 1 seals each record with the fuzz key's nonce
// and tag (as a holder of the key would), so the fuzzer also reaches what lies behind the tag check; flag 2 decodes
// header-only (a size-only simulation). Accepted chunks go through one ledger. Beyond not crashing, it checks what
// a receiver relies on: an accepted chunk lies inside the buffer and holds only finite floats, and the ledger's
// memory stays within its bound.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

#include "core/datagram.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

const dsgd::DatagramKey kKey{{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL}, 0x1122334455667788ULL};

void seal(std::vector<std::byte>& datagram) {
  if (datagram.size() < dsgd::kDatagramOverheadBytes) return;
  std::memcpy(datagram.data() + 40, &kKey.nonce, sizeof kKey.nonce);
  const std::size_t body = datagram.size() - dsgd::kDatagramTagBytes;
  const std::uint64_t tag = dsgd::siphash24(kKey.tag, std::span(datagram).first(body));
  std::memcpy(datagram.data() + body, &tag, sizeof tag);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsgd;
  if (size < 3) return 0;
  const bool sealed = (data[0] & 1) != 0;
  const bool header_only = (data[0] & 2) != 0;
  const std::size_t buffer_floats = data[1] | std::size_t{data[2]} << 8;
  ReceiveLedger ledger;
  std::set<std::uint64_t> sources;
  for (std::size_t at = 3; at + 2 <= size;) {
    const std::size_t length = std::min<std::size_t>(data[at] | std::size_t{data[at + 1]} << 8, size - at - 2);
    std::vector<std::byte> datagram(reinterpret_cast<const std::byte*>(data + at + 2),
                                    reinterpret_cast<const std::byte*>(data + at + 2 + length));
    at += 2 + length;
    if (sealed) seal(datagram);
    Chunk chunk;
    const ChunkDefect defect = decode_chunk(datagram, buffer_floats, kKey, chunk, header_only);
    if (defect != ChunkDefect::kNone) {
      ledger.refuse(defect);
      continue;
    }
    if (chunk.header.offset + chunk.count > buffer_floats) std::abort();
    for (const float f : chunk.floats) {
      if (!std::isfinite(f)) std::abort();
    }
    ledger.accept(chunk.header);
    sources.insert(std::uint64_t{chunk.header.source} << 1 | (chunk.header.group ? 1U : 0U));
    if (ledger.gap_ranges() > sources.size() * ReceiveLedger::kMaxGaps) std::abort();
  }
  return 0;
}
