#pragma once
// Include in the one file with main() of each program that runs MPI ranks (dsgd-mpi, the MPI test programs).
//
// Under AddressSanitizer, LeakSanitizer's hook turns the leak check at exit off for that program: OpenMPI 4.1 leaks
// in the MCA components it dlopens and dlcloses before exit, so the reports name an "<unknown module>" that no
// suppression can match (docs/testing.md "Sanitizers"). Address and UB errors are still reported, and dsgd's own
// code is leak-checked in the test programs that run it on the threads executor.

#if defined(__SANITIZE_ADDRESS__)
extern "C" int __lsan_is_turned_off() { return 1; }
#endif
