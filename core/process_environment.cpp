#include "core/process_environment.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace dsgd {

void set_process_environment(char** argv) {
  ::setenv("HWLOC_COMPONENTS", kHwlocComponents, 0);
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  // The program's own file, not /proc/self/exe itself: the kernel names a process after the file it executes, and
  // `ps`, `pkill dsgd` and the tests of stopped runs know dsgd by its name. A program whose file was replaced or
  // removed since it started is not restarted.
  std::error_code error;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  if (error || self.empty() || self.ends_with(" (deleted)")) return;
  // Set before the exec, so a failed exec cannot loop: the next start sees the variable and returns.
  if (::setenv("GOMP_SPINCOUNT", kOpenmpSpinCount, 0) != 0) return;
  ::execv(self.c_str(), argv);
}

}  // namespace dsgd
