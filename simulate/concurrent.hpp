#pragma once
// Independent simulations side by side: each SimGrid simulation runs in a forked child process of its own
// (simulate/simgrid/executor.hpp), so a sweep's points can use every core the machine has.

#include <cstddef>
#include <functional>

namespace dsgd::simulate {

// The cores this machine offers (at least 1).
int machine_cores();

// Calls task(i) for every i in [0, count), on up to `jobs` threads (jobs <= 1, or one task: in this thread, in
// order). Tasks are taken in index order, so put the longest first. Waits for all; then rethrows the exception of
// the lowest index that threw, so a failing sweep reports the same error however many jobs ran it.
void run_concurrently(std::size_t count, int jobs, const std::function<void(std::size_t)>& task);

}  // namespace dsgd::simulate
