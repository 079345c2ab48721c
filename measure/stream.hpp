#pragma once
// STREAM's triad (McCalpin): a[i] = b[i] + s c[i] over float arrays far larger than the caches, on OpenMP threads:
// the memory bandwidth a streaming kernel sees, counted as STREAM counts it (12 bytes per element: two loads, one
// store; the write-allocate read left out). The roofline's memory slope (`dsgd bench roofline`).

#include <cstddef>

namespace dsgd::measure {

struct StreamResult {
  double bytes_per_s = 0;  // best of the repetitions, STREAM's convention
  std::size_t elements = 0;
  int threads = 0;
  int repetitions = 0;
};

// `elements` 0: four times the last-level cache over the three arrays, at least 4 Mi elements each. `threads` 0: all.
StreamResult stream_triad(int threads, std::size_t elements = 0, int repetitions = 10);

}  // namespace dsgd::measure
