#include "measure/stream.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.hpp"
#include "measure/pingpong_buffers.hpp"

namespace dsgd::measure {

StreamResult stream_triad(int threads, std::size_t elements, int repetitions) {
  if (threads < 0 || repetitions < 1) throw InputError("stream: threads >= 0 and at least one repetition");
  if (elements == 0) {
    elements = std::max<std::size_t>(4 * last_level_cache_bytes() / (3 * sizeof(float)), std::size_t{4} << 20);
  }
  const int team = threads > 0 ? threads : omp_get_max_threads();
  std::vector<float> a(elements);
  std::vector<float> b(elements);
  std::vector<float> c(elements);
  const auto n = static_cast<std::ptrdiff_t>(elements);
  // First touch by the team, so pages sit where the threads that stream them run.
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    a[static_cast<std::size_t>(i)] = 0.0F;
    b[static_cast<std::size_t>(i)] = 1.0F;
    c[static_cast<std::size_t>(i)] = 2.0F;
  }
  const float scalar = 3.0F;
  double best = 1e30;
  for (int repetition = 0; repetition < repetitions; ++repetition) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      const auto j = static_cast<std::size_t>(i);
      a[j] = b[j] + scalar * c[j];
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  if (a[elements / 2] != 7.0F) throw InternalError("stream: the triad computed a wrong value");
  return {12.0 * static_cast<double>(elements) / best, elements, team, repetitions};
}

}  // namespace dsgd::measure
