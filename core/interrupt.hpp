#pragma once
// Interrupts: SIGINT, SIGTERM and SIGHUP as a request to stop that long-running work polls, so that dsgd can stop the
// processes it started and keep what it has (docs/errors.md "Interrupts").
//
// The flow: app/ owns one Interrupt and installs InterruptHandlers for it; it hands the Interrupt down explicitly
// (app::Context, RunOptions::interrupt, run_process's argument). Work that can stop cleanly holds an
// Interrupt::Watch while it runs and polls requested(): run_process then stops the process group of its child,
// the training runner stops at the next round. A signal that arrives while nobody watches ends the process the
// default way, as if no handler were installed; so does a second signal (Ctrl-C twice).
//
// Static state: a signal handler cannot be handed a context, so interrupt.cpp keeps the one pointer to the
// Interrupt the handlers serve (set and cleared by InterruptHandlers). Nothing else here is global.

#include <atomic>
#include <string>

#include "core/error.hpp"

namespace dsgd {

class Interrupt {
 public:
  // Records `signal` (the first one wins). Async-signal-safe: a handler calls it; tests call it directly.
  void request(int signal) noexcept;
  bool requested() const noexcept { return signal_.load() != 0; }
  // The signal that requested the stop, 0 if none.
  int signal() const noexcept { return signal_.load(); }
  // Whether some work is watching (the handler lets an unwatched signal end the process).
  bool watched() const noexcept { return watchers_.load() > 0; }

  // Marks work that polls requested() and stops cleanly, for its lifetime. A null interrupt watches nothing.
  class Watch {
   public:
    explicit Watch(const Interrupt* interrupt) noexcept;
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    const Interrupt* interrupt_;
  };

 private:
  static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only touch lock-free atomics");
  std::atomic<int> signal_{0};
  mutable std::atomic<int> watchers_{0};  // watching does not change what was requested
};

// While alive, SIGINT, SIGTERM and SIGHUP request `interrupt` when it is watched, and end the process (default action)
// when it is not or when it was requested already. The handler runs on an alternate signal stack of the thread that
// constructs this (the main thread; docs/errors.md "Interrupts"). Restores the previous handlers when destroyed. One
// at a time per process: a second throws InternalError.
class InterruptHandlers {
 public:
  explicit InterruptHandlers(Interrupt& interrupt);
  ~InterruptHandlers();
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;
};

// Work stopped because of an interrupt. app/ prints the message and exits with 128 + signal() (130 for SIGINT).
class InterruptedError : public Error {
 public:
  // The message is "interrupted by SIGINT; " + what, e.g. what = "stopped mpirun and its 3 ranks".
  InterruptedError(int signal, const std::string& what);
  int signal() const noexcept { return signal_; }

 private:
  int signal_;
};

// "SIGINT", "SIGTERM", "SIGKILL", "SIGSEGV", ..., else "signal N".
std::string signal_name(int signal);

}  // namespace dsgd
