#include "core/memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"

namespace dsgd {

namespace {

// The value of a "Key:   1234 kB" line of a /proc file, in bytes.
std::optional<std::uint64_t> read_kib_field(std::istream& in, const std::string& wanted) {
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    std::uint64_t kib = 0;
    if (fields >> key >> kib && key == wanted) return kib * 1024;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> read_number(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// What the cgroup's limit leaves, if the process has one.
std::optional<std::uint64_t> cgroup_headroom() {
  for (const auto& [limit_path, usage_path] :
       {std::pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        std::pair{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const auto limit = read_number(limit_path);
    const auto usage = read_number(usage_path);
    // v1 reports "no limit" as a number near 2^63.
    if (limit && usage && *limit < (std::uint64_t{1} << 60)) return *limit > *usage ? *limit - *usage : 0;
  }
  return std::nullopt;
}

// What an address-space limit (ulimit -v, RLIMIT_AS) leaves: every allocation also takes address space, and past
// the limit a library deep inside a run fails instead of dsgd refusing it up front.
std::optional<std::uint64_t> address_space_headroom() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  std::ifstream in("/proc/self/status");
  const auto used = read_kib_field(in, "VmSize:");
  if (!used) return std::nullopt;
  return limit.rlim_cur > *used ? limit.rlim_cur - *used : 0;
}

}  // namespace

std::uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  if (!in) throw IoError("/proc/meminfo: cannot read the memory this machine has available");
  const auto available = read_kib_field(in, "MemAvailable:");
  if (!available) throw IoError("/proc/meminfo: no MemAvailable line");
  std::uint64_t bytes = *available;
  if (const auto headroom = cgroup_headroom()) bytes = std::min(bytes, *headroom);
  if (const auto headroom = address_space_headroom()) bytes = std::min(bytes, *headroom);
  return bytes;
}

void check_available_memory(double bytes, const std::string& needs, const std::string& detail) {
  const double available = static_cast<double>(available_memory_bytes());
  if (bytes <= available) return;
  throw InputError(needs + bytes_text(bytes) + detail + ", more than the " + bytes_text(available) +
                   " this machine has available");
}

std::string out_of_memory_text() noexcept {
  try {
    std::string available = "unknown";
    try {
      available = bytes_text(static_cast<double>(available_memory_bytes()));
    } catch (const std::exception&) {  // /proc unreadable, or this allocation failed too
    }
    return "out of memory: an allocation failed with " + available +
           " available to this process now (the machine's free memory, a cgroup limit or ulimit -v); give it a "
           "smaller input or more memory (docs/errors.md \"Memory\")";
  } catch (...) {
    return {};  // not even the message fits; the caller prints its prefix alone
  }
}

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1000 && unit < 4) {
    bytes /= 1000;
    ++unit;
  }
  return significant(bytes, 3) + " " + units[unit];
}

}  // namespace dsgd
