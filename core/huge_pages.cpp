#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace dsgd {

namespace {

std::size_t whole_huge_pages(std::size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void* allocate_huge_pages(std::size_t bytes) {
  if (bytes < kHugePageBytes) {
    void* data = std::malloc(bytes == 0 ? 1 : bytes);
    if (data == nullptr) throw std::bad_alloc();
    return data;
  }
  if (bytes > SIZE_MAX - 2 * kHugePageBytes) throw std::bad_alloc();
  const std::size_t length = whole_huge_pages(bytes);
  // One huge page more than asked for, then the unaligned ends given back: mmap aligns to 4 KiB only.
  void* mapped = ::mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(mapped);
  const std::uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) ::munmap(mapped, aligned - start);
  const std::uintptr_t tail = start + kHugePageBytes - aligned;  // past aligned + length
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + length), tail);
  // Advice only: where transparent huge pages are off the mapping works on 4 KiB pages.
  ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void release_huge_pages(void* data, std::size_t bytes) noexcept {
  if (data == nullptr) return;
  if (bytes < kHugePageBytes) {
    std::free(data);
  } else {
    ::munmap(data, whole_huge_pages(bytes));
  }
}

}  // namespace dsgd
