#pragma once
// Shared by the neural-network tests: a fixture parameterised over every back end name (absent ones skip), device
// buffers, seeded test data and LayerSpec builders for small shapes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/random.hpp"

namespace dsgd::nn::test {

// Back-end memory holding a copy of host data; freed with its back end's release().
class DeviceBuffer {
 public:
  DeviceBuffer(Backend& backend, std::size_t count)
      : backend_(&backend), count_(count), data_(backend.allocate(count)) {}
  DeviceBuffer(Backend& backend, std::span<const float> host) : DeviceBuffer(backend, host.size()) { upload(host); }
  ~DeviceBuffer() { backend_->release(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* get() const { return data_; }
  std::size_t size() const { return count_; }
  void upload(std::span<const float> host) {
    ASSERT_EQ(host.size(), count_);
    backend_->copy_to_device(data_, host.data(), count_);
  }
  std::vector<float> download() const {
    std::vector<float> host(count_);
    backend_->copy_to_host(host.data(), data_, count_);
    backend_->synchronize();
    return host;
  }

 private:
  Backend* backend_;
  std::size_t count_;
  float* data_;
};

// `count` values uniform in [-amplitude, amplitude), the same on every run and machine.
inline std::vector<float> random_values(std::size_t count, std::uint64_t seed, float amplitude = 1.0f) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = (2.0f * unit_float(random_bits(seed, i)) - 1.0f) * amplitude;
  return values;
}

// Runs every test once per back end name; a back end that was not built or has no device here skips.
class BackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::vector<std::string> available = available_backends();
    if (std::find(available.begin(), available.end(), GetParam()) == available.end()) {
      GTEST_SKIP() << "back end '" << GetParam() << "' is not available here";
    }
    BackendOptions options;
    options.threads = threads_;
    options.seed = 7;
    backend_ = make_backend(GetParam(), options);
  }

  Backend& backend() { return *backend_; }

  int threads_ = 2;  // CPU threads; a subclass may set it in its constructor
  std::unique_ptr<Backend> backend_;
};

inline std::string backend_test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

// --- LayerSpec builders (shapes per image, as the model zoo writes them) ----------------------------------------

inline LayerSpec convolution(Shape in, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
                             std::int64_t pad, std::int64_t groups = 1, bool bias = true) {
  LayerSpec spec;
  spec.name = "conv";
  spec.kind = LayerKind::kConvolution;
  spec.input = in;
  spec.output = {out_channels, (in.height + 2 * pad - kernel) / stride + 1, (in.width + 2 * pad - kernel) / stride + 1};
  spec.kernel_h = spec.kernel_w = kernel;
  spec.stride = stride;
  spec.pad_h = spec.pad_w = pad;
  spec.groups = groups;
  spec.parameters = out_channels * (in.channels / groups) * kernel * kernel + (bias ? out_channels : 0);
  spec.forward_flops = 2.0 * static_cast<double>(spec.parameters * spec.output.height * spec.output.width);
  return spec;
}

// Pooling with Caffe's ceil rounding (the model zoo's), including its rule that drops a window starting in the
// right padding.
inline LayerSpec pooling(LayerKind kind, Shape in, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  auto size = [&](std::int64_t n) {
    std::int64_t out = (n + 2 * pad - kernel + stride - 1) / stride + 1;
    if (pad > 0 && (out - 1) * stride >= n + pad) --out;
    return out;
  };
  LayerSpec spec;
  spec.name = "pool";
  spec.kind = kind;
  spec.input = in;
  spec.output = {in.channels, size(in.height), size(in.width)};
  spec.kernel_h = spec.kernel_w = kernel;
  spec.stride = stride;
  spec.pad_h = spec.pad_w = pad;
  return spec;
}

inline LayerSpec elementwise(LayerKind kind, Shape shape, std::string name = "layer") {
  LayerSpec spec;
  spec.name = std::move(name);
  spec.kind = kind;
  spec.input = shape;
  spec.output = shape;
  if (kind == LayerKind::kBatchNorm) spec.parameters = 2 * shape.channels;
  return spec;
}

inline LayerSpec inner_product(Shape in, std::int64_t outputs) {
  LayerSpec spec;
  spec.name = "ip";
  spec.kind = LayerKind::kInnerProduct;
  spec.input = in;
  spec.output = {outputs, 1, 1};
  spec.parameters = outputs * in.elements() + outputs;
  spec.forward_flops = 2.0 * static_cast<double>(outputs * in.elements());
  return spec;
}

}  // namespace dsgd::nn::test
