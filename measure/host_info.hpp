#pragma once
// What this machine is: CPU model, cores, vector extensions, CUDA devices. Recorded in results' context and shown
// by `dsgd --version`, because a timing means little without the hardware it was taken on.

#include <string>
#include <vector>

namespace dsgd::measure {

struct CpuInfo {
  std::string model;                  // "AMD EPYC 9454 48-Core Processor"
  unsigned logical_cores = 0;         // what the OS lets us use
  std::vector<std::string> features;  // the vector extensions dsgd cares about: avx2, fma, avx512f
};

// Reads /proc/cpuinfo (Linux); fields it cannot find stay empty.
CpuInfo cpu_info();

struct CudaDevice {
  int index = 0;
  std::string name;
  double memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
};

// True if this build has the CUDA back end (DSGD_WITH_CUDA).
bool cuda_built();

// The CUDA devices present. Empty without CUDA support, without a driver or without a GPU: cudaGetDeviceCount
// returns an error (e.g. "insufficient driver") rather than 0 on a machine with no GPU, and that means "none".
std::vector<CudaDevice> cuda_devices();

}  // namespace dsgd::measure
