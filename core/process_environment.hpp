#pragma once
// The environment dsgd's programs give themselves and what they start, set first thing in main() where the user has
// not set it (docs/design.md "Threads on a busy machine" and "Process environment").

#include "dsgd/config.hpp"

namespace dsgd {

// The spin count dsgd gives libgomp (GOMP_SPINCOUNT) when the user set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT;
// CMakeLists.txt sets it, for the tests' environment too.
inline constexpr const char* kOpenmpSpinCount = DSGD_OPENMP_SPINCOUNT;

// The hwloc components dsgd's MPI processes leave out (HWLOC_COMPONENTS) when the user has not chosen: "gl", which
// opens X displays to find the GPUs attached to them. Where no display runs it falls back to TCP on "localhost",
// and where that name does not resolve locally (a container or chroot without /etc/hosts) every MPI_Init and
// mpirun waits 5 s for DNS. dsgd never needs a display's GPUs. CMakeLists.txt sets it, for the tests' environment too.
inline constexpr const char* kHwlocComponents = DSGD_HWLOC_COMPONENTS;

// Called first thing in main(), before any thread starts. Sets HWLOC_COMPONENTS to kHwlocComponents when unset
// (hwloc reads it when MPI starts, so the variable alone is enough; mpirun and the ranks inherit it). Then, when the
// user left OpenMP's waiting policy unset, sets GOMP_SPINCOUNT to kOpenmpSpinCount and re-executes this program
// (the file /proc/self/exe names, so the process keeps its name) with the same arguments and process id: libgomp
// reads its environment once, when it is loaded, before main(). Returns when nothing needs to restart, or when the
// re-execution failed or the program's file is gone (the program then runs with libgomp's defaults).
// A user's OMP_WAIT_POLICY, GOMP_SPINCOUNT or HWLOC_COMPONENTS is always kept.
void set_process_environment(char** argv);

}  // namespace dsgd
