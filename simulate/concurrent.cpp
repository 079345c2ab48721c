#include "simulate/concurrent.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace dsgd::simulate {

int machine_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

void run_concurrently(std::size_t count, int jobs, const std::function<void(std::size_t)>& task) {
  if (jobs <= 1 || count <= 1) {
    for (std::size_t i = 0; i < count; ++i) task(i);
    return;
  }
  std::vector<std::exception_ptr> failures(count);
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        task(i);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  const auto helpers = static_cast<std::size_t>(std::min<std::size_t>(static_cast<std::size_t>(jobs), count)) - 1;
  for (std::size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace dsgd::simulate
