#include "core/nn/backend.hpp"

#include <cstddef>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/nn/cpu/cpu_backend.hpp"
#include "dsgd/config.hpp"

#if DSGD_WITH_CUDA
#include "core/nn/cuda/cuda_backend.hpp"
#endif

namespace dsgd::nn {

namespace {

class HostSwapArea final : public SwapArea {
 public:
  explicit HostSwapArea(std::size_t bytes) : host_(bytes), device_(bytes) {}
  std::size_t bytes() const override { return host_.size(); }
  void to_device(std::size_t bytes) override { move(device_, host_, bytes); }
  void to_host(std::size_t bytes) override { move(host_, device_, bytes); }

 private:
  static void move(std::vector<std::byte>& to, const std::vector<std::byte>& from, std::size_t bytes) {
    DSGD_ENFORCE(bytes <= to.size(), "swap copy larger than the swap area");
    if (bytes > 0) std::memcpy(to.data(), from.data(), bytes);
  }
  std::vector<std::byte> host_;
  std::vector<std::byte> device_;
};

}  // namespace

std::unique_ptr<SwapArea> make_host_swap_area(std::size_t bytes) { return std::make_unique<HostSwapArea>(bytes); }

std::vector<std::string> backend_names() { return {"cpu", "cuda"}; }

std::unique_ptr<Layer> create_layer_from(std::string_view backend, const LayerMakers& makers, const LayerSpec& spec,
                                         int batch) {
  if (batch < 1) {
    throw InputError("layer '" + spec.name + "': batch must be at least 1, got " + std::to_string(batch));
  }
  switch (spec.kind) {
    case LayerKind::kConvolution:
      return makers.convolution(spec, batch);
    case LayerKind::kMaxPool:
    case LayerKind::kAveragePool:
      return makers.pooling(spec, batch);
    case LayerKind::kReLU:
      return makers.relu(spec, batch);
    case LayerKind::kLocalResponseNorm:
      return makers.lrn(spec, batch);
    case LayerKind::kBatchNorm:
      return makers.batch_norm(spec, batch);
    case LayerKind::kInnerProduct:
      return makers.inner_product(spec, batch);
    case LayerKind::kDropout:
      return makers.dropout(spec, batch);
    case LayerKind::kSoftmax:
      return makers.softmax(spec, batch);
    case LayerKind::kConcat:
    case LayerKind::kEltwiseAdd:
      break;
  }
  throw UnavailableError(std::string(backend) + " back end: layer '" + spec.name + "' is a " +
                         std::string(to_string(spec.kind)) +
                         ", which has no single-input layer here (only sequential models run layer by layer)");
}

void check_shape_preserving(std::string_view what, const LayerSpec& spec) {
  if (!(spec.input == spec.output) || spec.parameters != 0) {
    throw InputError(std::string(what) + " '" + spec.name +
                     "': output shape differs from input shape, or parameters given");
  }
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names = {"cpu"};
#if DSGD_WITH_CUDA
  if (cuda_backend_available()) names.emplace_back("cuda");
#endif
  return names;
}

int backend_device_count(std::string_view name) {
  if (name == "cpu") return 1;
  if (name == "cuda") {
#if DSGD_WITH_CUDA
    return cuda_device_count();
#else
    return 0;
#endif
  }
  throw UnknownNameError("back end", name, backend_names());
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
