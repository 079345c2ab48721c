#include "measure/datagram_rate.hpp"

#include <chrono>
#include <vector>

#include "core/datagram.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd::measure {

DatagramRate measure_datagram_rate(const std::string& where, double seconds) {
  using Clock = std::chrono::steady_clock;
  const std::vector<float> floats(kMaxChunkFloats, 0.5F);
  const DatagramKey key = DatagramKey::random();
  const ChunkHeader header{1, 0, 0, 0, 0};
  double encode_s = 0;
  double decode_s = 0;
  std::size_t bytes = 0;
  int rounds = 0;
  Chunk chunk;
  const auto start = Clock::now();
  while (rounds < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    const auto before = Clock::now();
    const auto datagram = encode_chunk(header, floats, key);
    const auto encoded = Clock::now();
    const ChunkDefect defect = decode_chunk(datagram, floats.size(), key, chunk);
    const auto decoded = Clock::now();
    DSGD_ENFORCE(defect == ChunkDefect::kNone, "a datagram this process encoded decodes");
    encode_s += std::chrono::duration<double>(encoded - before).count();
    decode_s += std::chrono::duration<double>(decoded - encoded).count();
    bytes = datagram.size();
    ++rounds;
  }
  const double mean_s = (encode_s + decode_s) / (2.0 * rounds);
  DatagramRate rate;
  rate.bytes_per_s = static_cast<double>(bytes) / mean_s;
  rate.source = format(
      "measured by dsgd calibrate on %s: a datagram of %zu bytes (%zu floats) encoded (tagged) in %.3g us and decoded "
      "(checked) in %.3g us, means of %d, one thread; the bytes over the mean of the two",
      where.c_str(), bytes, floats.size(), encode_s / rounds * 1e6, decode_s / rounds * 1e6, rounds);
  return rate;
}

}  // namespace dsgd::measure
