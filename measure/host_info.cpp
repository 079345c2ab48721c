#include "measure/host_info.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "dsgd/config.hpp"

namespace dsgd::measure {

CpuInfo cpu_info() {
  CpuInfo info;
  info.logical_cores = std::max(1U, std::thread::hardware_concurrency());
  std::ifstream in("/proc/cpuinfo");
  static const std::set<std::string> kInteresting = {"sse4_2",   "avx",      "avx2",        "fma",     "avx512f",
                                                     "avx512bw", "avx512vl", "avx512_bf16", "amx_tile"};
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && info.model.empty()) info.model = value;
    if (key == "flags" && info.features.empty()) {
      std::istringstream flags(value);
      for (std::string flag; flags >> flag;) {
        if (kInteresting.contains(flag)) info.features.push_back(flag);
      }
    }
  }
  return info;
}

bool cuda_built() { return DSGD_WITH_CUDA != 0; }

#if !DSGD_WITH_CUDA
std::vector<CudaDevice> cuda_devices() { return {}; }
#endif

}  // namespace dsgd::measure
