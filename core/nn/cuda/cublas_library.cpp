// cuBLAS loaded at its first use (core/nn/cuda/context.hpp, Cublas).

#include <dlfcn.h>

#include <string>

#include "core/error.hpp"
#include "core/nn/cuda/context.hpp"

namespace dsgd::nn::cuda {

namespace {

// The soname of the cuBLAS these headers declare; the dynamic loader's search (LD_LIBRARY_PATH, the binary's
// run path, ldconfig) first, then the toolkit the build found.
const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

void* open_library() {
  if (void* handle = ::dlopen(kSoname.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  const std::string first_error = ::dlerror();
  const std::string fallback = std::string(DSGD_CUBLAS_DIR) + "/" + kSoname;
  if (void* handle = ::dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  throw UnavailableError("cuda back end: cannot load cuBLAS (" + kSoname + "): " + first_error +
                         "; nor from the build's toolkit: " + ::dlerror());
}

template <typename Function>
void bind(void* library, Function& function, const char* name) {
  function = reinterpret_cast<Function>(::dlsym(library, name));
  if (function == nullptr) {
    throw UnavailableError("cuda back end: " + kSoname + " has no " + name + " (a cuBLAS older than the headers?)");
  }
}

Cublas load() {
  void* library = open_library();  // kept for the life of the process, like a linked library
  Cublas calls{};
  // The exported names: cublas_v2.h maps cublasCreate to cublasCreate_v2 and so on.
  bind(library, calls.create, "cublasCreate_v2");
  bind(library, calls.destroy, "cublasDestroy_v2");
  bind(library, calls.set_stream, "cublasSetStream_v2");
  bind(library, calls.set_math_mode, "cublasSetMathMode");
  bind(library, calls.get_version, "cublasGetVersion_v2");
  bind(library, calls.status_string, "cublasGetStatusString");
  bind(library, calls.status_name, "cublasGetStatusName");
  bind(library, calls.sgemm, "cublasSgemm_v2");
  bind(library, calls.sgemv, "cublasSgemv_v2");
  bind(library, calls.sdot, "cublasSdot_v2");
  return calls;
}

}  // namespace

const Cublas& cublas_library() {
  static const Cublas calls = load();  // a failed load throws, and the next call tries again
  return calls;
}

}  // namespace dsgd::nn::cuda
