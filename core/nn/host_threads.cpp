#include "core/nn/host_threads.hpp"

#include <omp.h>

namespace dsgd::nn {

HostThreads::HostThreads(int threads) : saved_(omp_get_max_threads()) {
  if (threads > 0 && threads != saved_) omp_set_num_threads(threads);
}

HostThreads::~HostThreads() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

}  // namespace dsgd::nn
