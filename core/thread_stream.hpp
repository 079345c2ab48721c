#pragma once
// Comm::start_stream for the native executors (threads, MPI): the body runs on a std::thread of its own with a
// second Comm of the caller's rank, which the executor makes (a Comm over the same mailboxes or communicator, with
// its own breakdown). Posts are a counting semaphore under a mutex; every wait is bounded by the world's timeout.

#include <memory>

#include "core/comm.hpp"

namespace dsgd {

// Starts `body` on a new thread with `stream_comm` (the same rank as `caller`, outliving nothing but the stream).
// join() charges the caller's wait to `caller`. A take() longer than `timeout_s` throws TimeoutError naming the rank,
// as does a join() longer than twice that (the body's own waits end within the timeout).
StreamPtr start_thread_stream(Comm& caller, std::unique_ptr<Comm> stream_comm, StreamBody body, double timeout_s);

}  // namespace dsgd
