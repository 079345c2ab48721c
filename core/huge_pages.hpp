#pragma once
// Storage for large arrays that live long and are read often -- a dataset's pixels -- on 2 MiB transparent huge
// pages where the kernel grants them (docs/time-to-accuracy.md "Cost"): a few hundred pages instead of tens of
// thousands, each faulted in once, where a first-touched page is costly (14-16 us on a VM measured there).

#include <cstddef>
#include <new>
#include <vector>

namespace dsgd {

// Arrays of at least this many bytes are mapped on their own, 2 MiB-aligned and advised for huge pages.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// `bytes` of memory: below kHugePageBytes from malloc, otherwise a private anonymous mapping of `bytes`
// rounded up to whole huge pages, advised MADV_HUGEPAGE (the kernel may still serve 4 KiB pages: the same memory,
// only slower). Throws std::bad_alloc when neither has the memory.
void* allocate_huge_pages(std::size_t bytes);
// Returns what allocate_huge_pages(`bytes`) gave; the same `bytes`.
void release_huge_pages(void* data, std::size_t bytes) noexcept;

// A standard allocator over allocate_huge_pages, for std::vector.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_huge_pages(n * sizeof(T)));
  }
  void deallocate(T* data, std::size_t n) noexcept { release_huge_pages(data, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// The pixel storage of data::Dataset.
using HugeFloats = std::vector<float, HugePageAllocator<float>>;

}  // namespace dsgd
