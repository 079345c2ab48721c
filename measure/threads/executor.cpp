#include "measure/threads/executor.hpp"

#include <exception>
#include <thread>

#include "measure/threads/comm.hpp"

namespace dsgd::measure::threads {

ThreadsResult run_threads(const WorldOptions& options, const WorkerFunction& worker) {
  if (options.size < 1) throw InputError("threads executor: world size " + std::to_string(options.size) + " < 1");
  if (!(options.timeout_s > 0)) throw InputError("threads executor: timeout must be positive");
  Hub hub(options);
  std::vector<std::unique_ptr<ThreadsComm>> comms;
  for (int rank = 0; rank < options.size; ++rank) comms.push_back(std::make_unique<ThreadsComm>(hub, rank));

  std::mutex failure_mutex;
  std::exception_ptr first_failure;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(options.size));
  for (int rank = 0; rank < options.size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        worker(*comms[static_cast<std::size_t>(rank)]);
      } catch (const std::exception& e) {
        {
          std::lock_guard lock(failure_mutex);
          // The first failure is the cause; the others are mostly "aborted" echoes of it.
          if (!first_failure && !hub.aborted()) first_failure = std::current_exception();
        }
        hub.abort("rank " + std::to_string(rank) + " failed: " + e.what());
      } catch (...) {
        {
          std::lock_guard lock(failure_mutex);
          if (!first_failure && !hub.aborted()) first_failure = std::current_exception();
        }
        hub.abort("rank " + std::to_string(rank) + " failed");
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (first_failure) std::rethrow_exception(first_failure);

  ThreadsResult result;
  result.wall_s = hub.now_s();
  for (const auto& comm : comms) result.per_rank.push_back(comm->breakdown());
  return result;
}

}  // namespace dsgd::measure::threads
