#include "core/openmp_policy.hpp"

#include <unistd.h>

#include <cstdlib>

namespace dsgd {

void restart_with_bounded_openmp_spinning(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  // Set before the exec, so a failed exec cannot loop: the next start sees the variable and returns.
  if (::setenv("GOMP_SPINCOUNT", kOpenmpSpinCount, 0) != 0) return;
  ::execv("/proc/self/exe", argv);
}

}  // namespace dsgd
