#pragma once
// What /proc/self/smaps and the kernel's settings say about this process's memory, for the memory tests.

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace dsgd {

// The value of `field` ("THPeligible") of the mapping of /proc/self/smaps that holds `address`; empty if none.
inline std::string smaps_field(const void* address, const std::string& field) {
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
inline bool huge_pages_on_request() {
  std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(setting, text);
  return text.find("[always]") != std::string::npos || text.find("[madvise]") != std::string::npos;
}

}  // namespace dsgd
