#pragma once
// How fast one core of this machine tags and checks dsgd's authenticated datagrams (core/datagram.hpp: SipHash-2-4
// over every byte, when a datagram is sent and when it is received). `dsgd calibrate` writes it as the CPU's
// `datagram_Bps`, and a simulation charges a rank's core that long per datagram (docs/validation.md).

#include <string>

namespace dsgd::measure {

struct DatagramRate {
  double bytes_per_s = 0;  // a full datagram's bytes over the mean of its encode and its decode
  std::string source;      // how it was measured, where and when
};

// Encodes and decodes a full datagram (kMaxChunkFloats floats) in turns for about `seconds`, on this thread.
DatagramRate measure_datagram_rate(const std::string& where, double seconds = 0.2);

}  // namespace dsgd::measure
