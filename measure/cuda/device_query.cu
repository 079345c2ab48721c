// CUDA device discovery for measure/host_info.hpp. Compiled only with DSGD_WITH_CUDA.
#include <cuda_runtime.h>

#include "measure/host_info.hpp"

namespace dsgd::measure {

std::vector<CudaDevice> cuda_devices() {
  int count = 0;
  // No driver or no GPU gives an error code here, not a count of 0: both mean "no device".
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return {};
  }
  std::vector<CudaDevice> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    devices.push_back(
        {i, prop.name, static_cast<double>(prop.totalGlobalMem), prop.major, prop.minor, prop.multiProcessorCount});
  }
  return devices;
}

}  // namespace dsgd::measure
