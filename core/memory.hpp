#pragma once
// How much memory this process may still take, for refusing work before a big allocation rather than failing
// (or being killed) in the middle of it (docs/errors.md "Memory").

#include <cstdint>
#include <string>

namespace dsgd {

// Bytes this process may allocate now: the kernel's MemAvailable (/proc/meminfo), lowered to what the cgroup's
// limit leaves (cgroup v2 memory.max - memory.current, or v1's limit_in_bytes - usage_in_bytes) and to what an
// address-space limit leaves (RLIMIT_AS - VmSize), where either is set.
// Throws IoError when /proc/meminfo cannot be read.
std::uint64_t available_memory_bytes();

// Throws InputError "NEEDS<bytes as text>DETAIL, more than the <available> this machine has available" when `bytes`
// is over available_memory_bytes(): the one check of readers and experiments that allocate what their input asks.
void check_available_memory(double bytes, const std::string& needs, const std::string& detail = "");

// The one-line message for a std::bad_alloc that no estimate caught first: "out of memory: an allocation failed
// with 1.2 GB available to this process ...". Never throws (it is called while memory is short).
std::string out_of_memory_text() noexcept;

// "1.25 GB" (decimal units, three significant digits), for messages.
std::string bytes_text(double bytes);

}  // namespace dsgd
