#include "measure/threads/executor.hpp"

#include <exception>
#include <string>
#include <thread>

#include "core/world.hpp"
#include "measure/threads/comm.hpp"

namespace dsgd::measure::threads {

WorldResult run(const WorldOptions& options, const WorkerFunction& worker) {
  return run(options, worker, [](std::function<void()> body) { return std::thread(std::move(body)); });
}

WorldResult run(const WorldOptions& options, const WorkerFunction& worker, const ThreadStarter& start_thread) {
  check_world(options, "threads", /*simulated=*/false);
  Hub hub(options);
  std::vector<std::unique_ptr<ThreadsComm>> comms;
  for (int rank = 0; rank < options.size; ++rank) comms.push_back(std::make_unique<ThreadsComm>(hub, rank));

  FirstFailure failure;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(options.size));
  for (int rank = 0; rank < options.size; ++rank) {
    try {
      threads.push_back(start_thread([&, rank] {
        try {
          worker(*comms[static_cast<std::size_t>(rank)]);
        } catch (...) {
          const std::exception_ptr error = std::current_exception();
          // A failure after the abort is an "aborted" echo of the first one.
          if (!hub.aborted()) failure.record(rank, error);
          // Out of memory, the reason itself may not fit: abort without one (an exception here is std::terminate).
          try {
            hub.abort("rank " + std::to_string(rank) + " failed: " + exception_text(error));
          } catch (...) {
            hub.abort({});
          }
        }
      }));
    } catch (const std::exception& error) {
      // Joinable threads must not be destroyed (std::terminate): wake the started ones from their waits, join them.
      const std::string reason = "cannot create thread " + std::to_string(rank + 1) + " of " +
                                 std::to_string(options.size) + ": " + error.what();
      hub.abort("the threads executor " + reason);
      for (auto& thread : threads) thread.join();
      throw UnavailableError("threads executor: " + reason);
    }
  }
  for (auto& thread : threads) thread.join();
  failure.rethrow_if_any();

  WorldResult result;
  result.time_s = hub.now_s();
  result.wall_s = result.time_s;
  for (const auto& comm : comms) result.per_rank.push_back(comm->breakdown());
  return result;
}

}  // namespace dsgd::measure::threads
