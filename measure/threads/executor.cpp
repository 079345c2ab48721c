#include "measure/threads/executor.hpp"

#include <exception>
#include <thread>

#include "core/world.hpp"
#include "measure/threads/comm.hpp"

namespace dsgd::measure::threads {

WorldResult run(const WorldOptions& options, const WorkerFunction& worker) {
  check_world(options, "threads", /*simulated=*/false);
  Hub hub(options);
  std::vector<std::unique_ptr<ThreadsComm>> comms;
  for (int rank = 0; rank < options.size; ++rank) comms.push_back(std::make_unique<ThreadsComm>(hub, rank));

  FirstFailure failure;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(options.size));
  for (int rank = 0; rank < options.size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        worker(*comms[static_cast<std::size_t>(rank)]);
      } catch (...) {
        const std::exception_ptr error = std::current_exception();
        // A failure after the abort is an "aborted" echo of the first one.
        if (!hub.aborted()) failure.record(rank, error);
        hub.abort("rank " + std::to_string(rank) + " failed: " + exception_text(error));
      }
    });
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
