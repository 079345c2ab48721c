#pragma once
// Seed 002's lost-update experiment (Dogwild!): "adding a constant value during gradient update and looking at the
// end value". Hogwild threads update shared weights with an unsynchronised load, add, store; when two threads
// interleave on one element, one of the additions is overwritten and lost. Here T threads each add c = 1 to every
// element of a shared float vector K times, each addition a separate relaxed std::atomic_ref<float> load and
// store (data-race-free in the C++ sense, yet just as lossy as plain code: relaxed atomics compile to plain moves
// on x86 and ARM). The end sum tells how many additions were lost. See docs/lost-updates.md.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::measure {

// How the threads walk the shared vector.
enum class LostUpdateVariant {
  // Thread t starts at element t*M/T and walks the vector cyclically: threads touch different elements at a time,
  // as Hogwild threads work on different samples' features, and collide only when they drift into one another.
  kSpread,
  // Every thread starts at element 0 and walks the same order: all threads on the same cache lines at the same time
  // (with 16 floats, one 64-byte line). The worst case, which shows the race is real.
  kHot,
  // The spread walk with each addition one relaxed fetch_add (an atomic read-modify-write): the control, which
  // never loses an addition.
  kFetchAdd,
};

std::string_view to_string(LostUpdateVariant variant);
// "spread", "hot" or "fetch-add"; throws UnknownNameError listing them otherwise.
LostUpdateVariant lost_update_variant_from_string(std::string_view name);
std::vector<std::string> lost_update_variant_names();

// T*K*c must stay below this so that every partial sum of an element is an exact float (float's 24-bit significand).
inline constexpr std::int64_t kMaxExactFloatSum = std::int64_t{1} << 24;

// With additions_per_element = 0, K is chosen so that one run makes about this many additions (0.04 s of load and
// store pairs, 0.15 s of fetch_adds on a 2-core VM), capped to keep T*K below kMaxExactFloatSum and at least 1:
// runs much shorter than that would end before the threads overlap, since starting a thread takes tens of
// microseconds.
inline constexpr std::int64_t kAutoAdditionsPerRun = std::int64_t{1} << 26;

// Most threads one run starts: far beyond any machine's hardware threads (oversubscription is allowed), well below
// what the kernel lets one process create.
inline constexpr int kMaxLostUpdateThreads = 4096;

struct LostUpdateRun {
  LostUpdateVariant variant = LostUpdateVariant::kSpread;
  int threads = 0;
  std::size_t floats = 0;
  std::int64_t additions_per_element = 0;  // K, per thread
  std::int64_t additions = 0;              // T*K*M, what an exact sum would hold
  std::int64_t lost = 0;                   // additions - end sum; in [0, additions]
  double seconds = 0;                      // from the barrier to the last thread's end
  // The threads' CPU time during the run, summed. cpu_seconds / seconds is how many of them ran at once on average:
  // near 1 with 2 threads means they mostly took turns (a busy or oversubscribed machine) and had little chance to
  // collide, whatever the lost count says.
  double cpu_seconds = 0;
};

// One run: `threads` threads, started together by a barrier, each add 1 to each of `floats` elements
// `additions_per_element` times (0: chosen as kAutoAdditionsPerRun says). Throws InputError for threads < 1 or
// above kMaxLostUpdateThreads, floats < 1 or more than the available memory holds, additions_per_element < 0 or
// threads * additions_per_element >= kMaxExactFloatSum.
LostUpdateRun run_lost_updates(LostUpdateVariant variant, int threads, std::size_t floats,
                               std::int64_t additions_per_element);

struct LostUpdateOptions {
  LostUpdateVariant variant = LostUpdateVariant::kSpread;
  std::vector<int> threads;         // empty: 1 .. std::thread::hardware_concurrency()
  std::vector<std::size_t> floats;  // empty: default_lost_update_floats(variant)
  std::int64_t additions_per_element = 0;
  int repeats = 3;
};

// 1e3, 1e5 and 1e6 floats (a small to a mid-sized network), or 16 floats (one cache line) for the hot variant.
std::vector<std::size_t> default_lost_update_floats(LostUpdateVariant variant);

// One row per (threads, floats): the repeats' runs.
struct LostUpdateRow {
  LostUpdateVariant variant = LostUpdateVariant::kSpread;
  int threads = 0;
  std::size_t floats = 0;
  std::int64_t additions_per_element = 0;
  std::int64_t additions = 0;       // per run
  std::vector<std::int64_t> lost;   // per run
  std::vector<double> seconds;      // per run
  std::vector<double> cpu_seconds;  // per run, all threads

  std::int64_t lost_total() const;
  double lost_percent() const;  // lost_total / (additions * runs) * 100
  double median_seconds() const;
  double additions_per_second() const;  // additions / median_seconds
  double parallelism() const;           // all runs' CPU seconds / all runs' seconds
};

// Every (threads, floats) pair, threads outermost, the runs of one row back to back; `on_row` (if set) sees each row
// as it completes. Throws InputError for repeats < 1 and for what run_lost_updates refuses, before running anything.
std::vector<LostUpdateRow> measure_lost_updates(const LostUpdateOptions& options,
                                                const std::function<void(const LostUpdateRow&)>& on_row = {});

}  // namespace dsgd::measure
