#include "measure/pingpong_buffers.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "measure/calibration.hpp"

namespace dsgd::measure {

namespace {

// Slots start on page boundaries, so a slot's first and last pages are its own.
constexpr std::size_t kPageBytes = 4096;

std::size_t round_up_to_page(std::size_t bytes) {
  return (std::max<std::size_t>(bytes, 1) + kPageBytes - 1) / kPageBytes * kPageBytes;
}

}  // namespace

std::optional<std::size_t> parse_cache_size(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return std::nullopt;
}

std::size_t last_level_cache_bytes() {
  std::size_t largest = 0;
  std::error_code error;
  const std::filesystem::path caches = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : std::filesystem::directory_iterator(caches, error)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    std::ifstream in(entry.path() / "size");
    std::string text;
    if (!std::getline(in, text)) continue;
    if (const auto bytes = parse_cache_size(text)) largest = std::max(largest, *bytes);
  }
  return largest;
}

std::size_t cold_pool_bytes() {
  const std::size_t cache = last_level_cache_bytes();
  return cache > 0 ? 2 * cache : std::size_t{64} << 20;
}

PingPongBuffers::PingPongBuffers(std::size_t largest_bytes, std::size_t pool_bytes)
    : largest_bytes_(largest_bytes), cold_(pool_bytes > 0) {
  const std::size_t bytes = cold_ ? std::max(pool_bytes, 2 * round_up_to_page(largest_bytes)) : largest_bytes;
  // Touched once here, so the page faults of a first use are not in any trip.
  region_.assign(bytes, std::byte{1});
}

std::byte* PingPongBuffers::next(std::size_t bytes) {
  if (bytes > largest_bytes_) {
    throw InputError("ping-pong buffers: a message of " + std::to_string(bytes) + " bytes is larger than the " +
                     std::to_string(largest_bytes_) + " they were made for");
  }
  if (!cold_) return region_.data();
  const std::size_t slot = round_up_to_page(bytes);
  const std::size_t slots = region_.size() / slot;
  return region_.data() + (turn_++ % slots) * slot;
}

int trips_per_sample(std::size_t bytes) {
  return static_cast<int>(
      std::clamp<std::size_t>((std::size_t{1} << 22) / std::max<std::size_t>(bytes, 4096), 1, 1000));
}

void pingpong_trips(Comm& comm, PingPongBuffers& buffers, std::size_t bytes, int trips) {
  constexpr Tag kTag = 1;
  const int peer = 1 - comm.rank();
  for (int trip = 0; trip < trips; ++trip) {
    if (comm.rank() == 0) {
      comm.send(peer, kTag, buffers.next(bytes), bytes, Category::kNetwork);
      comm.recv(peer, kTag, buffers.next(bytes), bytes, Category::kNetwork);
    } else {
      comm.recv(peer, kTag, buffers.next(bytes), bytes, Category::kNetwork);
      comm.send(peer, kTag, buffers.next(bytes), bytes, Category::kNetwork);
    }
  }
}

std::string pingpong_buffers_text(std::size_t pool_bytes) {
  if (pool_bytes == 0) return "from one warm buffer";
  return "from cold buffers (cycled through " + bytes_text(static_cast<double>(pool_bytes)) + ")";
}

}  // namespace dsgd::measure
