// core/huge_pages.hpp: large arrays are 2 MiB-aligned mappings advised for transparent huge pages (where the kernel
// offers them), small ones come from malloc, and both hold what is written to them through std::vector.

#include "core/huge_pages.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

namespace dsgd {
namespace {

// The value of `field` ("THPeligible") of the mapping of /proc/self/smaps that holds `address`; empty if none.
std::string smaps_field(const void* address, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind(field + ":", 0) == 0) {
      return line.substr(field.size() + 1);
    }
  }
  return "";
}

// Whether this kernel gives huge pages to mappings that ask (transparent_hugepage/enabled "always" or "madvise").
bool huge_pages_on_request() {
  std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(setting, text);
  return text.find("[always]") != std::string::npos || text.find("[madvise]") != std::string::npos;
}

TEST(HugePages, ALargeArrayIsAlignedToAHugePageAndAdvisedForThem) {
  HugeFloats pixels(3 * kHugePageBytes / sizeof(float) + 5);
  std::iota(pixels.begin(), pixels.end(), 0.0f);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pixels.data()) % kHugePageBytes, 0u);
  EXPECT_EQ(pixels.back(), static_cast<float>(pixels.size() - 1));
  if (!huge_pages_on_request()) GTEST_SKIP() << "transparent huge pages are off on this machine";
  const std::string eligible = smaps_field(pixels.data(), "THPeligible");
  EXPECT_NE(eligible.find('1'), std::string::npos) << "THPeligible:" << eligible;
}

TEST(HugePages, SmallArraysAndGrowthKeepTheirValues) {
  HugeFloats values = {1.0f, 2.0f, 3.0f};
  values.resize(kHugePageBytes / sizeof(float) + 1, 7.0f);  // from malloc to a mapping of its own
  EXPECT_EQ(values[2], 3.0f);
  EXPECT_EQ(values.back(), 7.0f);
  values.clear();
  values.shrink_to_fit();
  EXPECT_TRUE(values.empty());
  HugeFloats none;
  none.reserve(0);
  EXPECT_EQ(none.size(), 0u);
}

TEST(HugePages, AnImpossibleSizeIsRefusedWithBadAlloc) {
  HugePageAllocator<float> allocator;
  EXPECT_THROW(static_cast<void>(allocator.allocate(static_cast<std::size_t>(-1) / 2)), std::bad_array_new_length);
  EXPECT_THROW(static_cast<void>(allocate_huge_pages(static_cast<std::size_t>(-1) - 1)), std::bad_alloc);
}

}  // namespace
}  // namespace dsgd
