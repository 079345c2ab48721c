#pragma once
// Where a ping-pong's messages come from and go to. The classic ping-pong sends one buffer back and forth, so every
// message after the first finds its data in cache. Training does not: between two exchanges of the model a
// forward/backward runs, and the model is back in memory by then: a 2 MiB message took about twice as long from
// cold buffers as from a warm one (docs/validation.md "Cold buffers"). So `dsgd calibrate` measures its links from
// cold buffers, and says so in the platform's sources.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/comm.hpp"

namespace dsgd::measure {

// Parses a sysfs cache size: "32768K", "2M", "1G" or plain bytes. nullopt if malformed.
std::optional<std::size_t> parse_cache_size(std::string_view text);

// The largest cache of CPU 0 in bytes (/sys/devices/system/cpu/cpu0/cache/index*/size); 0 if none can be read.
// sysconf(_SC_LEVEL3_CACHE_SIZE) is not used: a KVM guest's can be wrong (320 MiB reported for a 32 MiB L3).
std::size_t last_level_cache_bytes();

// The pool a cold ping-pong cycles through: twice the last-level cache, so each slot has been evicted by the others
// before its next turn; 64 MiB where the cache size is unknown.
std::size_t cold_pool_bytes();

// A ping-pong's message buffers. Warm (pool_bytes 0): one buffer of `largest_bytes`, the same for every message.
// Cold: page-aligned slots cycled through a region of at least pool_bytes (and at least two slots of the largest
// message), each message taking the next slot for its size.
class PingPongBuffers {
 public:
  PingPongBuffers(std::size_t largest_bytes, std::size_t pool_bytes);
  // The buffer for the next message of `bytes` (at most largest_bytes). Throws InputError beyond it.
  std::byte* next(std::size_t bytes);
  bool cold() const { return cold_; }

 private:
  std::vector<std::byte> region_;
  std::size_t largest_bytes_;
  bool cold_;
  std::size_t turn_ = 0;
};

// Round trips per sample of a ping-pong: about a millisecond's worth for small messages, one for large ones. A
// function of the size only, so both ranks agree without talking (dsgd-mpi's and the threads ping-pong).
int trips_per_sample(std::size_t bytes);

// `trips` round trips of `bytes` between ranks 0 (which sends first) and 1 of `comm`, each message from and into
// the next of `buffers`; charged to network. Other ranks must not call it.
void pingpong_trips(Comm& comm, PingPongBuffers& buffers, std::size_t bytes, int trips);

// "from one warm buffer" or "from cold buffers (cycled through 64 MiB)", for sources and labels.
std::string pingpong_buffers_text(std::size_t pool_bytes);

}  // namespace dsgd::measure
