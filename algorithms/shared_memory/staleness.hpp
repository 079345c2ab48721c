#pragma once
// Staleness of shared-memory SGD updates (seed 003 Tables I-II): the number of sample-updates to the shared model
// that the gradient of a sample did not see although they reached the model no later than the sample's own write.
//
// How the methods measure it (only when given a recorder): a counter of sample-updates applied to the shared model
// is read before a sample reads the model (r) and advanced by a write of m samples after the write (to e). The
// final sample of the write then has staleness e - r - 1 - v, where v is the number of its own write's samples it
// did see (0, or m - 1 with HogBatch's local model): the other threads' updates that landed in between, plus the own
// write's samples computed on a model that did not hold them. One record per write, for its final sample, which is
// what Tables I-II tabulate ("staleness of the final update in a batch").
//
// Counting convention beside the tables: Table II counts exactly this ("other" updates), so it is compared exactly.
// Table I's Mini-Batch and HogBatch rows count the whole write unit, the sample itself included (S, HS, T x HS), one
// more than "others only": the recorder's values are those formulas minus one. Table I's Hogwild row [0, T - 1]
// already counts others only (with HS = 1 the HogBatch row would read [1, T]).

#include <bit>
#include <cstdint>
#include <vector>

namespace dsgd::algorithms::shared_memory {

struct StalenessBounds {
  std::uint64_t min = 0;
  std::uint64_t max = 0;
};

// How a method shares its model: the rows of Tables I-II.
enum class SharingScheme { kSerial, kHogwild, kMiniBatch, kHogBatch };

// Table I (plain methods): Serial [0, 0]; Hogwild [0, T - 1]; Mini-Batch [S, S]; HogBatch [HS, T x HS], with
// `batch` = S for Mini-Batch and HS for HogBatch (ignored otherwise). Throws InputError for threads or batch < 1.
StalenessBounds table1_staleness(SharingScheme scheme, int threads, int batch);
// Table II (improved staleness: a thread computes on model - its own pending gradient): Serial [0, 0]; Hogwild
// [0, T - 1]; Mini-Batch [S - S/T, S - S/T]; HogBatch [0, T x HS - HS].
StalenessBounds table2_staleness(SharingScheme scheme, int threads, int batch);

// The distribution of recorded staleness values.
struct StalenessHistogram {
  std::uint64_t count = 0;
  std::uint64_t min = 0;  // 0 when count is 0
  std::uint64_t max = 0;
  double mean = 0;
  // buckets[0] counts staleness 0, buckets[b] (b >= 1) staleness in [2^(b-1), 2^b); trailing empty buckets dropped.
  std::vector<std::uint64_t> buckets;
};

// Per-thread tallies (no sharing between threads, no false sharing), merged after the threads have joined.
class StalenessRecorder {
 public:
  // Throws InputError for threads < 1.
  explicit StalenessRecorder(int threads);

  // Called by thread `thread` only (0 <= thread < threads()); distinct threads may record concurrently.
  void record(int thread, std::uint64_t staleness) {
    Tally& tally = tallies_[static_cast<std::size_t>(thread)];
    ++tally.count;
    tally.sum += staleness;
    if (staleness < tally.min) tally.min = staleness;
    if (staleness > tally.max) tally.max = staleness;
    ++tally.buckets[bucket_of(staleness)];
  }

  // Every thread's records together; call when no thread is recording.
  StalenessHistogram merged() const;
  int threads() const { return static_cast<int>(tallies_.size()); }

 private:
  static constexpr int kBuckets = 65;
  static int bucket_of(std::uint64_t staleness) {  // 0, or floor(log2) + 1
    return static_cast<int>(std::bit_width(staleness));
  }
  struct alignas(64) Tally {
    std::uint64_t count = 0;
    std::uint64_t min = UINT64_MAX;
    std::uint64_t max = 0;
    std::uint64_t sum = 0;  // wraps only beyond 2^64 in total, far past any run
    std::uint64_t buckets[kBuckets] = {};
  };
  std::vector<Tally> tallies_;
};

}  // namespace dsgd::algorithms::shared_memory
