#pragma once
// The CPU back end's buffers -- a network's activations, gradients and parameters, oneDNN's scratchpads -- carved
// from 2 MiB-aligned mappings advised for transparent huge pages and kept for reuse once released
// (docs/time-to-accuracy.md "Cost"). A fresh process (a numeric simulation's fork) then faults its buffers in a
// few huge pages at a time instead of one 4 KiB page at a time, and a process that builds networks again and again
// (a benchmark's rounds, an evaluator per evaluation) gets its pages back without faulting them again.
//
// Policy: a released block waits for the next request of the same rounded size; memory goes back to the system
// only for blocks of kPoolDirectBytes and more, which have mappings of their own. A forked child starts pools of
// its own: it neither reuses nor writes into its parent's blocks (that would copy them page by page). Under
// AddressSanitizer blocks come from calloc and go back to free, so that use after release is still caught.

#include <cstddef>

namespace dsgd {

// Blocks of at least this many bytes are mapped on their own and unmapped when released.
inline constexpr std::size_t kPoolDirectBytes = std::size_t{4} << 20;

// `bytes` of zeroed memory aligned to 64 bytes (a cache line, an AVX-512 vector), rounded up to whole 64-byte
// vectors (a kernel may load the last one in full). Thread-safe. Throws std::bad_alloc when there is no memory.
void* pool_allocate(std::size_t bytes);
// Gives back what pool_allocate returned; nullptr does nothing. Thread-safe.
void pool_release(void* data) noexcept;

// One block of the pool, released when destroyed. Movable, not copyable.
class PoolBuffer {
 public:
  PoolBuffer() = default;
  explicit PoolBuffer(std::size_t bytes) : data_(pool_allocate(bytes)) {}
  ~PoolBuffer() { pool_release(data_); }
  PoolBuffer(PoolBuffer&& other) noexcept : data_(other.data_) { other.data_ = nullptr; }
  PoolBuffer& operator=(PoolBuffer&& other) noexcept {
    if (this != &other) {
      pool_release(data_);
      data_ = other.data_;
      other.data_ = nullptr;
    }
    return *this;
  }
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

// Bytes the pool of this process holds for reuse (released, not yet taken again). For tests and reports.
std::size_t pool_held_bytes();
// False where blocks come from calloc and go back to free (AddressSanitizer builds).
bool pool_keeps_blocks();

}  // namespace dsgd
