#include "measure/lost_updates.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <memory>
#include <thread>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/stats.hpp"
#include "measure/waiting_share.hpp"

namespace dsgd::measure {

namespace {

constexpr std::size_t kCacheLineBytes = 64;

constexpr EnumNames<3> kVariantNames = {"spread", "hot", "fetch-add"};  // LostUpdateVariant's order

void check_run(int threads, std::size_t floats, std::int64_t additions_per_element) {
  if (threads < 1) throw InputError("lost updates: thread counts must be at least 1, got " + std::to_string(threads));
  if (floats < 1) throw InputError("lost updates: vector sizes must be at least 1 float, got 0");
  if (threads > kMaxLostUpdateThreads) {
    throw InputError("lost updates: at most " + std::to_string(kMaxLostUpdateThreads) + " threads, got " +
                     std::to_string(threads));
  }
  check_available_memory(static_cast<double>(floats) * sizeof(float),
                         "lost updates: a vector of " + std::to_string(floats) + " floats needs ");
  if (additions_per_element < 0) {
    throw InputError("lost updates: additions per element must be at least 1 (or 0 for automatic), got " +
                     std::to_string(additions_per_element));
  }
  // A float holds every integer up to 2^24 exactly; past it, 2^24 + 1 rounds to 2^24 and the sum would show
  // rounding as "lost" additions.
  if (threads * additions_per_element >= kMaxExactFloatSum) {
    throw InputError("lost updates: threads x additions per element = " + std::to_string(threads) + " x " +
                     std::to_string(additions_per_element) +
                     " must stay below 2^24 = " + std::to_string(kMaxExactFloatSum) + " so that float sums are exact");
  }
}

std::int64_t automatic_additions_per_element(int threads, std::size_t floats) {
  const auto per_pass = static_cast<std::int64_t>(threads) * static_cast<std::int64_t>(floats);
  return std::clamp<std::int64_t>(kAutoAdditionsPerRun / per_pass, 1, (kMaxExactFloatSum - 1) / threads);
}

// One thread's share: `passes` walks over the vector from `start`, wrapping around, adding 1 to each element.
template <bool kAtomicAdd>
void add_ones(float* data, std::size_t floats, std::size_t start, std::int64_t passes) {
  const auto add_one = [data](std::size_t i) {
    std::atomic_ref<float> element(data[i]);
    if constexpr (kAtomicAdd) {
      element.fetch_add(1.0F, std::memory_order_relaxed);
    } else {
      // Two operations, as in Hogwild's `w[i] -= step * g[i]`: another thread's store between them is overwritten.
      const float seen = element.load(std::memory_order_relaxed);
      element.store(seen + 1.0F, std::memory_order_relaxed);
    }
  };
  for (std::int64_t pass = 0; pass < passes; ++pass) {
    for (std::size_t i = start; i < floats; ++i) add_one(i);
    for (std::size_t i = 0; i < start; ++i) add_one(i);
  }
}

}  // namespace

std::string_view to_string(LostUpdateVariant variant) {
  const std::string_view name = name_of(variant, kVariantNames, {});
  if (name.empty()) throw InternalError("lost updates: unknown variant " + std::to_string(static_cast<int>(variant)));
  return name;
}

LostUpdateVariant lost_update_variant_from_string(std::string_view name) {
  return from_name<LostUpdateVariant>("lost-update variant", name, kVariantNames);
}

std::vector<std::string> lost_update_variant_names() { return name_list(kVariantNames); }

std::vector<std::size_t> default_lost_update_floats(LostUpdateVariant variant) {
  if (variant == LostUpdateVariant::kHot) return {kCacheLineBytes / sizeof(float)};
  return {1000, 100000, 1000000};
}

LostUpdateRun run_lost_updates(LostUpdateVariant variant, int threads, std::size_t floats,
                               std::int64_t additions_per_element) {
  check_run(threads, floats, additions_per_element);
  LostUpdateRun run;
  run.variant = variant;
  run.threads = threads;
  run.floats = floats;
  run.additions_per_element =
      additions_per_element > 0 ? additions_per_element : automatic_additions_per_element(threads, floats);
  run.additions = threads * run.additions_per_element * static_cast<std::int64_t>(floats);

  // Cache-line aligned, so that 16 floats of the hot variant are exactly one line.
  std::vector<float> storage(floats + kCacheLineBytes / sizeof(float) - 1, 0.0F);
  void* aligned = storage.data();
  std::size_t space = storage.size() * sizeof(float);
  float* data = static_cast<float*>(std::align(kCacheLineBytes, floats * sizeof(float), aligned, space));
  DSGD_ENFORCE(data != nullptr, "the padded vector holds an aligned one");

  // The workers and this thread meet at the barrier, so every worker exists before any starts adding and the
  // clock starts once they are all created, not while threads are still being created.
  std::barrier start(threads + 1);
  std::atomic<bool> cancelled{false};
  std::vector<double> cpu_seconds(static_cast<std::size_t>(threads), 0.0);  // each worker writes its own
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  try {
    for (int t = 0; t < threads; ++t) {
      const std::size_t offset = variant == LostUpdateVariant::kHot
                                     ? 0
                                     : static_cast<std::size_t>(t) * floats / static_cast<std::size_t>(threads);
      workers.emplace_back([&, offset, t] {
        start.arrive_and_wait();
        if (cancelled.load()) return;
        const double cpu_start = thread_cpu_seconds();
        if (variant == LostUpdateVariant::kFetchAdd) {
          add_ones<true>(data, floats, offset, run.additions_per_element);
        } else {
          add_ones<false>(data, floats, offset, run.additions_per_element);
        }
        cpu_seconds[static_cast<std::size_t>(t)] = thread_cpu_seconds() - cpu_start;
      });
    }
  } catch (...) {
    // A thread could not be created: stand in for the missing ones at the barrier and let the others go home.
    cancelled.store(true);
    for (std::size_t missing = workers.size(); missing < static_cast<std::size_t>(threads); ++missing) {
      start.arrive_and_drop();
    }
    start.arrive_and_wait();
    for (auto& worker : workers) worker.join();
    throw;
  }
  // The clock starts before this thread arrives: a worker may run before this thread is scheduled again, and
  // its CPU time must fall inside the wall time.
  const auto begin = std::chrono::steady_clock::now();
  start.arrive_and_wait();
  for (auto& worker : workers) worker.join();
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (const double cpu : cpu_seconds) run.cpu_seconds += cpu;

  // Every element holds the number of its additions that survived: an integer no larger than T*K, exact in float.
  std::int64_t sum = 0;
  const std::int64_t most = threads * run.additions_per_element;
  for (std::size_t i = 0; i < floats; ++i) {
    const auto value = static_cast<std::int64_t>(data[i]);
    DSGD_ENFORCE_LE(value, most);
    sum += value;
  }
  run.lost = run.additions - sum;
  DSGD_ENFORCE_GE(run.lost, 0);
  return run;
}

std::int64_t LostUpdateRow::lost_total() const {
  std::int64_t total = 0;
  for (const auto value : lost) total += value;
  return total;
}

double LostUpdateRow::lost_percent() const {
  const double all = static_cast<double>(additions) * static_cast<double>(lost.size());
  return all > 0 ? 100.0 * static_cast<double>(lost_total()) / all : 0;
}

double LostUpdateRow::median_seconds() const { return median(seconds); }

double LostUpdateRow::additions_per_second() const {
  const double s = median_seconds();
  return s > 0 ? static_cast<double>(additions) / s : 0;
}

double LostUpdateRow::parallelism() const {
  double cpu = 0;
  double wall = 0;
  for (const double value : cpu_seconds) cpu += value;
  for (const double value : seconds) wall += value;
  return wall > 0 ? cpu / wall : 0;
}

std::vector<LostUpdateRow> measure_lost_updates(const LostUpdateOptions& options,
                                                const std::function<void(const LostUpdateRow&)>& on_row) {
  std::vector<int> thread_counts = options.threads;
  if (thread_counts.empty()) {
    const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    for (int t = 1; t <= hardware; ++t) thread_counts.push_back(t);
  }
  const std::vector<std::size_t> sizes =
      options.floats.empty() ? default_lost_update_floats(options.variant) : options.floats;
  if (options.repeats < 1) {
    throw InputError("lost updates: repeats must be at least 1, got " + std::to_string(options.repeats));
  }
  // Check every run before the first: a sweep should not fail after minutes of measuring.
  for (const int threads : thread_counts) {
    for (const std::size_t floats : sizes) check_run(threads, floats, options.additions_per_element);
  }

  std::vector<LostUpdateRow> rows;
  for (const int threads : thread_counts) {
    for (const std::size_t floats : sizes) {
      LostUpdateRow row;
      row.variant = options.variant;
      row.threads = threads;
      row.floats = floats;
      for (int repeat = 0; repeat < options.repeats; ++repeat) {
        const auto run = run_lost_updates(options.variant, threads, floats, options.additions_per_element);
        row.additions_per_element = run.additions_per_element;
        row.additions = run.additions;
        row.lost.push_back(run.lost);
        row.seconds.push_back(run.seconds);
        row.cpu_seconds.push_back(run.cpu_seconds);
      }
      if (on_row) on_row(row);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace dsgd::measure
