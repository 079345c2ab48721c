#pragma once
// Shared-memory SGD for L2-regularised logistic regression (seed 003, Sallinen et al. IPDPS 2016): Serial SGD,
// Mini-Batch, Hogwild, HogBatch, HogBatch with the improved-staleness local model, and multi-model Hogwild, each in
// its own file of this folder and listed in the catalog of registry.cpp. Nothing outside algorithms/ names them.
//
// Unlike the comm-interface algorithms of algorithms/, these own an OpenMP team (`omp parallel`): they are native
// only and never run under an executor. Every access to the model that another thread may touch at the same time
// goes through std::atomic_ref<float> with relaxed order (a plain move on x86-64), so the racy methods race on
// values, never in the C++ sense.
//
// The objective is linear::objective's F(w) = (1/n) sum_i log(1 + exp(-y_i w.x_i)) + (lambda / 2) |w|^2 (seed 003
// leaves the form open; docs: core/linear/logistic.hpp). The L2 term is applied as a proximal (implicit) step, so no
// learning rate makes it unstable:
//   * per-sample methods (serial, hogwild, multi-model-hogwild) shrink only the sample's features j, by
//     1 / (1 + a lambda n / c_j) with c_j the rows that hold feature j -- in expectation over the sample the
//     decay lambda w of the full gradient -- so their updates stay sparse (Niu et al.'s trick);
//   * batched methods (mini-batch, hogbatch, hogbatch-local) write densely anyway and shrink every feature at the
//     write by 1 / (1 + a m lambda) for a write of m samples.
// A step is the sum (not the mean) of its samples' gradients: w <- w - a sum_b grad(w, b), as seed 003 writes it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "algorithms/shared_memory/staleness.hpp"
#include "core/linear/logistic.hpp"

namespace dsgd::algorithms::shared_memory {

// How the threads of a pass are run.
enum class Schedule {
  kThreads,   // an OpenMP team of `threads` threads, units of work dealt dynamically (the real thing)
  kLockstep,  // a deterministic simulation in the calling thread: every virtual thread reads and computes one sample
              // per tick, then the threads whose unit of work ended write it, in thread order (seed 003's "every
              // model update takes the same time"); for staleness tests
};

struct MethodOptions {
  int threads = 0;     // OpenMP threads; 0: omp_get_max_threads(). Serial always uses 1.
  float alpha = 1.0F;  // learning rate a_k = alpha / sqrt(k), k the pass (1-based); the driver applies it
  int batch = 1024;    // S: samples per Mini-Batch update, split across the threads
  int hog_batch = 0;   // HS: samples a HogBatch thread accumulates before it writes; 0: max(1, batch / threads)
  int models = 1;      // k: models trained at once (multi-model-hogwild only)
  // multi-model-hogwild: rows x models labels (row-major, each -1 or +1), one binary task per model; null: every
  // model learns the data set's own labels. See hidden_task_labels().
  std::shared_ptr<const std::vector<float>> task_labels;
  std::uint64_t seed = 1;  // seeds the per-pass shuffle
  bool shuffle = true;     // visit rows in a fresh seeded order each pass (false: row order, as the slides' loops)
  Schedule schedule = Schedule::kThreads;
};

// Where model m's weight for feature j lives: model[j * stride + m]. Single-model methods: models = stride = 1.
// Multi-model: the k weights of one feature are contiguous and stride rounds k up so that one 64-byte line never
// holds parts of two features (a power of two up to 16 floats, then a multiple of 16).
struct ModelLayout {
  int models = 1;
  std::size_t stride = 1;
};

class Method {
 public:
  virtual ~Method() = default;

  // Binds the method to `problem` (its data set must outlive the passes): per-feature L2 weights, thread-private
  // gradients, labels. Untimed set-up, like reading the data. Throws InputError for task labels of the wrong size.
  virtual void prepare(const linear::Problem& problem) = 0;

  // One pass over the data with step size `step` (the driver's alpha / sqrt(pass)); `pass` (1-based) seeds the
  // shuffle, so serial and mini-batch give bit-identical models for the same seed and threads. `model` holds
  // layout().stride x features floats (64-byte aligned for multi-model: make_model()). With a recorder, the
  // staleness of the final sample of every write is recorded (staleness.hpp); with null, nothing is counted.
  virtual void pass(std::span<float> model, float step, int pass, StalenessRecorder* staleness) = 0;

  virtual ModelLayout layout() const { return {}; }
  // Threads actually used (options.threads resolved).
  virtual int threads() const = 0;
  // The [min, max] staleness the recorder measures in a lockstep schedule (Tables I-II in the recorder's
  // convention, see staleness.hpp), for this method's threads and batch sizes.
  virtual StalenessBounds staleness_bounds() const = 0;
};

// Which batch size a method is tuned by (so a sweep varies only the one that matters).
enum class BatchOption { kNone, kBatch, kHogBatch };

struct MethodEntry {
  std::string name;         // e.g. "hogbatch-local"
  std::string description;  // one line
  BatchOption batch_option = BatchOption::kNone;
  bool parallel = true;      // false: one thread whatever options.threads says (serial)
  bool multi_model = false;  // trains options.models models at once (the others take models = 1 only)
  bool synchronous = false;  // same seed and threads, same model bit for bit (threads or lockstep alike)
  // Throws InputError for bad options (threads < 0, alpha <= 0, batch < 1, hog_batch < 0, models < 1, or models
  // > 1 for a single-model method).
  std::function<std::unique_ptr<Method>(const MethodOptions&)> make;
};

// Every method, in seed 003's order: serial, mini-batch, hogwild, hogbatch, hogbatch-local, multi-model-hogwild.
const std::vector<MethodEntry>& method_catalog();
// Throws UnknownNameError listing the names.
const MethodEntry& find_method(const std::string& name);
std::vector<std::string> method_names();

// 64-byte aligned storage for models, so multi-model's padding lines up with cache lines.
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::size_t kAlignment = 64;
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT(google-explicit-constructor): allocator rebinding
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kAlignment})); }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{kAlignment}); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};
using ModelVector = std::vector<float, CacheLineAllocator<float>>;

// A zero model of `features` features in `method`'s layout.
ModelVector make_model(const Method& method, std::size_t features);

// Model m's weights (features floats) out of a model in `layout`.
std::vector<float> model_weights(std::span<const float> model, const ModelLayout& layout, int m);

// `models` binary tasks for multi-model-hogwild on `data` (rows x models, row-major): task 0 is the data set's own
// labels, task m > 0 the sign of x . v_m for a hidden weight vector v_m with seeded normal entries (ties +1).
std::vector<float> hidden_task_labels(const data::SparseDataset& data, int models, std::uint64_t seed);

}  // namespace dsgd::algorithms::shared_memory
