#include "core/nn/backend.hpp"

#include "core/error.hpp"
#include "core/nn/cpu/cpu_backend.hpp"
#include "dsgd/config.hpp"

#if DSGD_WITH_CUDA
#include "core/nn/cuda/cuda_backend.hpp"
#endif

namespace dsgd::nn {

std::vector<std::string> backend_names() { return {"cpu", "cuda"}; }

std::vector<std::string> available_backends() {
  std::vector<std::string> names = {"cpu"};
#if DSGD_WITH_CUDA
  if (cuda_backend_available()) names.emplace_back("cuda");
#endif
  return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options) {
  if (name == "cpu") return cpu::make_cpu_backend(options);
  if (name == "cuda") {
#if DSGD_WITH_CUDA
    return make_cuda_backend(options);
#else
    throw UnavailableError("back end 'cuda' was not built (configure with -DDSGD_WITH_CUDA=ON and the CUDA toolkit)");
#endif
  }
  throw UnknownNameError("back end", name, backend_names());
}

}  // namespace dsgd::nn
