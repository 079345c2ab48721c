#pragma once
// How dsgd's programs make OpenMP wait (docs/design.md "Threads on a busy machine"). By default libgomp's threads
// spin at every barrier for a long while before they sleep; when other processes hold the cores, the spinning
// threads burn the time slices their descheduled partners need. A short spin keeps the idle machine's hand-offs
// fast and yields the core soon under load. libgomp reads its environment once, when it is loaded, before main():
// so the program restarts itself with the setting.

#include "dsgd/config.hpp"

namespace dsgd {

// The spin count dsgd gives libgomp (GOMP_SPINCOUNT) when the user set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT;
// CMakeLists.txt sets it, for the tests' environment too.
inline constexpr const char* kOpenmpSpinCount = DSGD_OPENMP_SPINCOUNT;

// Called first thing in main(): when the user left OpenMP's waiting policy unset, sets GOMP_SPINCOUNT to
// kOpenmpSpinCount and re-executes this program (the file /proc/self/exe names, so the process keeps its name)
// with the same arguments and process id. Returns when nothing needs to change, or when the re-execution failed or
// the program's file is gone (the program then runs with libgomp's defaults).
// A user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is always kept.
void restart_with_bounded_openmp_spinning(char** argv);

}  // namespace dsgd
