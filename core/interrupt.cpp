#include "core/interrupt.hpp"

#include <signal.h>

#include <cstring>

namespace dsgd {

namespace {

// The Interrupt the installed handlers serve (the one piece of process-wide state, see interrupt.hpp).
std::atomic<Interrupt*> installed{nullptr};
static_assert(std::atomic<Interrupt*>::is_always_lock_free);

void on_signal(int signal) {
  Interrupt* interrupt = installed.load();
  if (interrupt != nullptr && interrupt->watched() && !interrupt->requested()) {
    interrupt->request(signal);
    return;
  }
  // Nobody can stop cleanly, or the user asked twice: end the process as if no handler were installed.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  ::sigemptyset(&fallback.sa_mask);
  ::sigaction(signal, &fallback, nullptr);
  ::raise(signal);
}

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};  // SIGHUP: the terminal closed

// The handlers that were there before InterruptHandlers, restored after it.
struct sigaction previous[sizeof kSignals / sizeof kSignals[0]];

// The handler runs on a stack of its own, never below the stack pointer of the code it interrupts: oneDNN's JIT
// kernels keep data there, and a signal frame pushed over it corrupted the heap (a training process signalled during
// an evaluation aborted in 2 of 6 tries; 0 of 14 with this stack). The kernel hands a signal sent to the process to
// its main thread first, the one that installs the handlers (docs/errors.md "Interrupts").
alignas(16) char handler_stack[128 * 1024];
bool own_stack = false;  // whether this stack replaced none (a sanitizer's may be there already)

}  // namespace

void Interrupt::request(int signal) noexcept {
  int none = 0;
  signal_.compare_exchange_strong(none, signal);
}

Interrupt::Watch::Watch(const Interrupt* interrupt) noexcept : interrupt_(interrupt) {
  if (interrupt_ != nullptr) interrupt_->watchers_.fetch_add(1);
}

Interrupt::Watch::~Watch() {
  if (interrupt_ != nullptr) interrupt_->watchers_.fetch_sub(1);
}

InterruptHandlers::InterruptHandlers(Interrupt& interrupt) {
  Interrupt* none = nullptr;
  if (!installed.compare_exchange_strong(none, &interrupt)) {
    throw InternalError("interrupt handlers are installed already (one Interrupt per process)");
  }
  struct sigaction action {};
  action.sa_handler = on_signal;
  ::sigemptyset(&action.sa_mask);
  // SA_RESTART: reads and waits elsewhere carry on; pollers see the flag within their slice.
  action.sa_flags = SA_RESTART | SA_ONSTACK;
  stack_t current{};
  own_stack = false;
  if (::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) != 0) {
    stack_t stack{};
    stack.ss_sp = handler_stack;
    stack.ss_size = sizeof handler_stack;
    own_stack = ::sigaltstack(&stack, nullptr) == 0;
  }
  for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    ::sigaction(kSignals[i], &action, &previous[i]);
  }
}

InterruptHandlers::~InterruptHandlers() {
  for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i)
    ::sigaction(kSignals[i], &previous[i], nullptr);
  if (own_stack) {
    stack_t none{};
    none.ss_flags = SS_DISABLE;
    ::sigaltstack(&none, nullptr);
  }
  installed.store(nullptr);
}

InterruptedError::InterruptedError(int signal, const std::string& what)
    : Error("interrupted by " + signal_name(signal) + "; " + what), signal_(signal) {}

std::string signal_name(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  if (abbreviation != nullptr) return std::string("SIG") + abbreviation;
  return "signal " + std::to_string(signal);
}

}  // namespace dsgd
