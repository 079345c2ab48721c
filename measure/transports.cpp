#include "measure/transports.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "dsgd/config.hpp"

namespace dsgd::measure {

namespace {

// Two host buffers, copied one into the other: the copy a threads message ends in, without the wake-up. Small
// copies are timed in batches (64 KiB in all), as one takes less than the clock's own cost.
class MemcpyCopy final : public TransportCopy {
 public:
  explicit MemcpyCopy(std::size_t bytes)
      : from_(std::max<std::size_t>(bytes, 1), 1), to_(from_.size()), batch_(std::max<std::size_t>(65536 / bytes, 1)) {}
  double copy_once() override {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < batch_; ++i) {
      std::memcpy(to_.data(), from_.data(), from_.size());
      from_[0] = to_[from_.size() - 1] + 1;  // each copy depends on the last, so none is elided or overlapped
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return took.count() / static_cast<double>(batch_);
  }

 private:
  std::vector<unsigned char> from_;
  std::vector<unsigned char> to_;
  std::size_t batch_;
};

}  // namespace

std::vector<Transport> local_transports() {
  std::vector<Transport> transports = {{"memcpy", "host memory to host memory, one thread, memcpy (warm buffers)",
                                        [](std::size_t bytes) { return std::make_unique<MemcpyCopy>(bytes); }}};
  for (auto& transport : cuda_transports()) transports.push_back(std::move(transport));
  return transports;
}

TransportPoint time_transport(const Transport& transport, std::size_t bytes, double budget_s, int min_samples) {
  if (bytes == 0) throw InputError("transports: a copy of 0 bytes");
  const auto copy = transport.make(bytes);
  copy->copy_once();  // warm-up: first touch, lazy allocation, the driver's first call
  std::vector<double> seconds;
  double spent = 0;
  while ((spent < budget_s || static_cast<int>(seconds.size()) < min_samples) && seconds.size() < 10000) {
    seconds.push_back(copy->copy_once());
    spent += seconds.back();
  }
  return {transport.name, bytes, median(seconds), *std::min_element(seconds.begin(), seconds.end()),
          static_cast<int>(seconds.size())};
}

std::vector<std::size_t> transport_sizes(std::size_t max_bytes) {
  std::set<std::size_t> sizes = {1};
  for (std::size_t bytes = 4; bytes <= max_bytes; bytes *= 4) sizes.insert(bytes);
  for (const std::size_t seed : {128, 512, 16384, 524288, 2097152, 4194304}) {
    if (seed <= max_bytes) sizes.insert(seed);
  }
  return {sizes.begin(), sizes.end()};
}

#if !DSGD_WITH_CUDA
std::vector<Transport> cuda_transports() { return {}; }
#endif

}  // namespace dsgd::measure
