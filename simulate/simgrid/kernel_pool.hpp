#pragma once
// OS threads that run the real kernels of a numeric simulation's ranks side by side (docs/time-to-accuracy.md
// "Cost"). SimGrid runs its actors one at a time in one OS thread, so without them every rank's forward/backward
// runs after the other's on one core. A rank submits its kernel, then spends its simulated compute time -- during
// which the other actors run and submit theirs -- and waits for its kernel after that time. Each kernel touches only
// its rank's memory (ComputeStep::rank_local), so the results are the bits of running them one after another.
//
// Created in the simulation's process, after the fork: a forked child has none of its parent's threads.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dsgd::simulate {

// The threads a pool gets for `requested` (0: one per processor this process may run on).
int kernel_threads_for(int requested);

class KernelPool {
 public:
  // A submitted kernel. wait() blocks until it has run and rethrows what it threw.
  class Ticket {
   public:
    void wait();

   private:
    friend class KernelPool;
    enum class State { kQueued, kRunning, kDone };
    KernelPool* pool_ = nullptr;
    std::function<void()> kernel_;
    State state_ = State::kQueued;
    std::exception_ptr error_;
  };
  using TicketPtr = std::shared_ptr<Ticket>;

  // `threads` >= 2 in all, the waiting simulation thread counted: threads - 1 are started here.
  explicit KernelPool(int threads);
  // Runs what is still queued, then joins the threads.
  ~KernelPool();
  KernelPool(const KernelPool&) = delete;
  KernelPool& operator=(const KernelPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Queues `kernel` (first in, first out); the caller keeps what it refers to alive until the ticket's wait().
  TicketPtr submit(std::function<void()> kernel);

 private:
  void work();
  // Runs `ticket` (taken off the queue, under lock) on this thread and wakes its waiters.
  void run(Ticket& ticket, std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable queued_;  // a kernel was queued, or the pool is closing
  std::condition_variable done_;    // a kernel finished
  std::deque<TicketPtr> queue_;
  bool closing_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dsgd::simulate
