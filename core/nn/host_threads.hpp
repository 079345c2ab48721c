#pragma once
// The calling thread's OpenMP thread count, set for a scope and restored after. OpenMP's nthreads-var is per thread,
// and both oneDNN (OpenMP runtime) and Debian's OpenMP build of OpenBLAS read it at each call, so this is how a
// rank's thread count reaches them without touching other ranks' settings: several workers may run in one process.
// A call left at the default takes every core, and two workers of one process then run twice the cores' threads.

namespace dsgd::nn {

class HostThreads {
 public:
  explicit HostThreads(int threads);
  ~HostThreads();
  HostThreads(const HostThreads&) = delete;
  HostThreads& operator=(const HostThreads&) = delete;

 private:
  int saved_;
};

}  // namespace dsgd::nn
