#pragma once
// Internal to algorithms/shared_memory/: the pieces the method files share -- relaxed access to the shared model,
// the L2 proximal factors, the per-pass order, the staleness clock, thread-private buffers, and the two ways of
// running T threads over units of work (an OpenMP team, or the deterministic lockstep simulation).

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "algorithms/shared_memory/method.hpp"
#include "algorithms/shared_memory/staleness.hpp"
#include "core/data/sparse_dataset.hpp"
#include "core/error.hpp"

namespace dsgd::algorithms::shared_memory::detail {

// Shared model cells: relaxed atomics compile to plain moves on x86-64 but keep concurrent access defined.
inline float load_relaxed(float& cell) { return std::atomic_ref<float>(cell).load(std::memory_order_relaxed); }
inline void store_relaxed(float& cell, float value) {
  std::atomic_ref<float>(cell).store(value, std::memory_order_relaxed);
}

// Checks the options every method shares; throws InputError naming the method and the option.
void check_options(const std::string& method, const MethodOptions& options, bool multi_model);
// options.threads resolved (0: omp_get_max_threads()).
int resolve_threads(const MethodOptions& options);
// A recorder, if any, must have a tally for each of the method's threads.
inline void check_recorder(const StalenessRecorder* staleness, int threads) {
  if (staleness != nullptr) DSGD_ENFORCE_GE(staleness->threads(), threads);
}

// The sparse L2 weights s_j = lambda n / c_j (c_j: rows holding feature j; 0 where c_j = 0): their mean over a
// uniformly drawn row is lambda on every feature any row holds.
std::vector<float> degree_l2_weights(const data::SparseDataset& data, double lambda);
// shrink_j = 1 / (1 + step s_j): the proximal step of a sample's L2 term on feature j.
void proximal_shrink(std::span<const float> weights, float step, std::span<float> shrink);
// The dense proximal factor of a write of `samples` samples: 1 / (1 + step samples lambda).
inline float dense_shrink(float step, std::size_t samples, double lambda) {
  return static_cast<float>(1.0 / (1.0 + static_cast<double>(step) * static_cast<double>(samples) * lambda));
}

// d(loss)/d(margin) for label y: y * logistic_slope(y w.x), the scalar every sample's gradient is a multiple of.
float label_slope(float margin, float label);

// The rows of pass `pass` in visiting order: a seeded permutation (core/data/sampler.hpp), or row order.
class PassOrder {
 public:
  PassOrder(std::size_t rows, std::uint64_t seed, int pass, bool shuffle);
  std::size_t operator[](std::size_t position) const { return shuffled_ ? order_[position] : position; }
  std::size_t size() const { return rows_; }

 private:
  std::size_t rows_;
  bool shuffled_;
  std::vector<std::size_t> order_;
};

// Asks for the 64-byte line holding `address` in all cache levels. Not __builtin_prefetch: g++ 12 counts it as free
// of side effects, so a function made only of prefetches is judged pure and its calls are deleted at -O2 and above.
inline void prefetch_line(const void* address) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address);
#endif
}

// Starts loading the row at `position + kPrefetchRows` of a pass into cache. A shuffled pass visits rows at random,
// so without it every row begins with cache misses on its indices and values that the hardware prefetchers cannot
// foresee (2-3x slower per non-zero on rcv1-test-like than in row order).
constexpr std::size_t kPrefetchRows = 4;
inline void prefetch_ahead(const data::SparseDataset& data, const PassOrder& order, std::size_t position) {
  // The offsets of a row further ahead first: finding where a row starts is itself a cache miss.
  if (position + 2 * kPrefetchRows < order.size()) prefetch_line(&data.row_begin[order[position + 2 * kPrefetchRows]]);
  if (position + kPrefetchRows >= order.size()) return;
  const std::size_t row = order[position + kPrefetchRows];
  const std::uint64_t begin = data.row_begin[row];
  const std::uint64_t end = data.row_begin[row + 1];
  // Lines from the one holding `begin` to the one holding the row's last entry (indices and values are 4 bytes).
  constexpr std::uint64_t kPerLine = 64 / sizeof(float);
  if (begin < end) {
    const std::uint64_t last = end - 1;
    for (std::uint64_t k = begin; k < last + kPerLine; k += kPerLine) {
      prefetch_line(data.index.data() + std::min(k, last));
      prefetch_line(data.value.data() + std::min(k, last));
    }
  }
  prefetch_line(data.label.data() + row);
}

// Counts sample-updates applied to the shared model during a pass (staleness.hpp's r and e).
class StalenessClock {
 public:
  std::uint64_t now() const { return applied_.load(); }
  // After a write of `samples` samples: the count including them.
  std::uint64_t advance(std::uint64_t samples) { return applied_.fetch_add(samples) + samples; }

 private:
  std::atomic<std::uint64_t> applied_{0};
};

// Thread-private dense buffers, each on its own cache lines (no false sharing between threads).
class PrivateBuffers {
 public:
  PrivateBuffers() = default;
  PrivateBuffers(int threads, std::size_t floats) : floats_(round_up(floats)) {
    storage_.assign(static_cast<std::size_t>(threads) * floats_, 0.0F);
  }
  std::span<float> operator[](int thread) {
    return {storage_.data() + static_cast<std::size_t>(thread) * floats_, floats_};
  }
  int threads() const { return floats_ == 0 ? 0 : static_cast<int>(storage_.size() / floats_); }

 private:
  static std::size_t round_up(std::size_t floats) { return (floats + 15) / 16 * 16; }
  std::size_t floats_ = 0;
  ModelVector storage_;
};

// Per-thread scalars of the unit workers, one cache line each.
template <typename T>
struct alignas(64) PerThread {
  T value{};
};

// What every unit worker of method M carries through a pass; a method's Worker derives from it and adds
// sample(thread, position) and write(thread, samples) for run_units.
template <typename M>
struct UnitWorker {
  M& method;
  const PassOrder& order;
  float* model = nullptr;
  float step = 0;
  StalenessRecorder* staleness = nullptr;
  StalenessClock clock;
};

// The catalog entry for method class M: `entry`'s name, description and flags, and a `make` that checks the
// options (check_options with the entry's name and multi_model flag) and then constructs M(options, args...).
template <typename M, typename... Args>
MethodEntry checked_entry(MethodEntry entry, Args... args) {
  entry.make = [name = entry.name, multi_model = entry.multi_model,
                args...](const MethodOptions& options) -> std::unique_ptr<Method> {
    check_options(name, options, multi_model);
    return std::make_unique<M>(options, args...);
  };
  return entry;
}

// Runs `count` positions of a pass as units of `unit` consecutive positions on `threads` threads: each unit is
// worker.sample(thread, position) for its positions, then worker.write(thread, samples). kThreads deals units
// dynamically, `chunk` units at a time (seed 003: `omp parallel for schedule(dynamic)`); kLockstep simulates the
// threads deterministically in this thread: per tick, every busy thread samples one position in thread order, then
// every thread whose unit ended writes it, in thread order, and takes the next unit.
// Calls body(std::true_type{}) or body(std::false_type{}) as `flag` is: a run-time choice made a compile-time one, so
// the worker instantiated for each case carries no branch on it in its per-sample loop.
template <typename Body>
void with_flag(bool flag, Body&& body) {
  if (flag) {
    body(std::true_type{});
  } else {
    body(std::false_type{});
  }
}

template <typename Worker>
void run_units(Worker& worker, Schedule schedule, std::size_t count, std::size_t unit, int threads, std::size_t chunk) {
  const std::size_t units = (count + unit - 1) / unit;
  if (schedule == Schedule::kThreads) {
#pragma omp parallel num_threads(threads)
    {
      const int thread = omp_get_thread_num();
#pragma omp for schedule(dynamic, chunk)
      for (std::size_t u = 0; u < units; ++u) {
        const std::size_t begin = u * unit;
        const std::size_t end = std::min(begin + unit, count);
        for (std::size_t position = begin; position < end; ++position) worker.sample(thread, position);
        worker.write(thread, end - begin);
      }
    }
    return;
  }
  struct Cursor {
    std::size_t begin = 0, next = 0, end = 0;
    bool busy = false;
  };
  std::vector<Cursor> cursors(static_cast<std::size_t>(threads));
  std::size_t next_unit = 0;
  const auto take = [&](Cursor& cursor) {
    cursor.busy = next_unit < units;
    if (!cursor.busy) return;
    cursor.begin = cursor.next = next_unit * unit;
    cursor.end = std::min(cursor.begin + unit, count);
    ++next_unit;
  };
  for (Cursor& cursor : cursors) take(cursor);
  for (bool busy = units > 0; busy;) {
    for (int t = 0; t < threads; ++t) {
      Cursor& cursor = cursors[static_cast<std::size_t>(t)];
      if (cursor.busy) worker.sample(t, cursor.next++);
    }
    busy = false;
    for (int t = 0; t < threads; ++t) {
      Cursor& cursor = cursors[static_cast<std::size_t>(t)];
      if (cursor.busy && cursor.next == cursor.end) {
        worker.write(t, cursor.end - cursor.begin);
        take(cursor);
      }
      busy = busy || cursor.busy;
    }
  }
}

}  // namespace dsgd::algorithms::shared_memory::detail
