#include "simulate/simgrid/kernel_pool.hpp"

#include <sched.h>

#include <algorithm>

#include "core/error.hpp"

namespace dsgd::simulate {

int kernel_threads_for(int requested) {
  if (requested < 0) {
    throw InputError("simulation threads must be >= 0 (0: one per processor), got " + std::to_string(requested));
  }
  if (requested > 0) return requested;
  // The processors this process may run on (a container's or taskset's share), not the machine's.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1U, std::thread::hardware_concurrency());
}

KernelPool::KernelPool(int threads) {
  DSGD_ENFORCE(threads >= 2, "a kernel pool needs at least two threads");
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

KernelPool::~KernelPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  queued_.notify_all();
  for (auto& worker : workers_) worker.join();
}

KernelPool::TicketPtr KernelPool::submit(std::function<void()> kernel) {
  auto ticket = std::make_shared<Ticket>();
  ticket->pool_ = this;
  ticket->kernel_ = std::move(kernel);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(ticket);
  }
  queued_.notify_one();
  return ticket;
}

void KernelPool::run(Ticket& ticket, std::unique_lock<std::mutex>& lock) {
  ticket.state_ = Ticket::State::kRunning;
  lock.unlock();
  try {
    ticket.kernel_();
  } catch (...) {
    ticket.error_ = std::current_exception();
  }
  ticket.kernel_ = nullptr;  // what it captured goes before the waiter returns
  lock.lock();
  ticket.state_ = Ticket::State::kDone;
  done_.notify_all();
}

void KernelPool::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing with nothing left
    const TicketPtr ticket = std::move(queue_.front());
    queue_.pop_front();
    run(*ticket, lock);
  }
}

void KernelPool::Ticket::wait() {
  KernelPool& pool = *pool_;
  std::unique_lock<std::mutex> lock(pool.mutex_);
  // The waiting thread works too, oldest kernel first (its own among them), until its own is done: so one thread
  // per processor keeps every processor busy, and a wait never depends on a pool thread being free. A kernel is a
  // bounded computation, so the wait ends; a simulation that runs too long is stopped by its wall-time limit.
  while (state_ != State::kDone) {
    if (state_ == State::kQueued || !pool.queue_.empty()) {
      const TicketPtr next = std::move(pool.queue_.front());
      pool.queue_.pop_front();
      pool.run(*next, lock);
    } else {
      pool.done_.wait(lock);
    }
  }
  if (error_) std::rethrow_exception(error_);
}

}  // namespace dsgd::simulate
