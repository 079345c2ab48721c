#include "core/nn/cpu/cpu_backend.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/nn/cpu/context.hpp"

namespace dsgd::nn::cpu {

// --- helpers shared by the layer files (declared in context.hpp) -------------------------------------------------

dnnl::memory::desc nchw(int batch, const Shape& shape) {
  return dnnl::memory::desc({batch, shape.channels, shape.height, shape.width}, dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::nchw);
}

dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& engine) {
  return dnnl::memory(md, engine, DNNL_MEMORY_NONE);
}

DataMemory::DataMemory(const dnnl::memory::desc& input, const dnnl::memory::desc& output, const dnnl::engine& engine)
    : src(unbound_memory(input, engine)),
      dst(unbound_memory(output, engine)),
      diff_src(unbound_memory(input, engine)),
      diff_dst(unbound_memory(output, engine)) {}

void bind(dnnl::memory& memory, const float* data) {
  memory.set_data_handle(const_cast<float*>(data));  // NOLINT: oneDNN's handle is void* for inputs too
}

Staged::Staged(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted, Direction direction,
               const dnnl::engine& engine)
    : plain_(unbound_memory(plain, engine)) {
  if (plain == wanted) return;
  wanted_ = dnnl::memory(wanted, engine);  // owned, zero-padded by oneDNN where channels are blocked
  reorder_ = Primitive(direction == Direction::kIn ? dnnl::reorder::primitive_desc(plain_, wanted_, own_scratchpad())
                                                   : dnnl::reorder::primitive_desc(wanted_, plain_, own_scratchpad()),
                       engine);
}

dnnl::primitive_attr own_scratchpad() {
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attributes;
}

Primitive::Primitive(const dnnl::primitive_desc_base& pd, const dnnl::engine& engine) : primitive_(pd.get()) {
  const dnnl::memory::desc scratchpad = pd.scratchpad_desc();
  if (scratchpad.get_size() > 0) scratchpad_ = dnnl::memory(scratchpad, engine);
}

void Primitive::execute(const dnnl::stream& stream, std::unordered_map<int, dnnl::memory> args) const {
  if (scratchpad_) args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_);
  primitive_.execute(stream, args);
}

dnnl::memory& Staged::in(dnnl::stream& stream, const float* data) {
  bind(plain_, data);
  if (!wanted_) return plain_;
  reorder_.execute(stream, {{DNNL_ARG_FROM, plain_}, {DNNL_ARG_TO, wanted_}});
  return wanted_;
}

dnnl::memory& Staged::out(float* data) {
  bind(plain_, data);
  return wanted_ ? wanted_ : plain_;
}

void Staged::out_done(dnnl::stream& stream) {
  if (wanted_) reorder_.execute(stream, {{DNNL_ARG_FROM, wanted_}, {DNNL_ARG_TO, plain_}});
}

std::int64_t right_padding(const LayerSpec& spec, std::int64_t in, std::int64_t out, std::int64_t kernel,
                           std::int64_t pad_l) {
  const std::int64_t stride = std::max<std::int64_t>(spec.stride, 1);
  if ((in + 2 * pad_l - kernel) >= 0 && (in + 2 * pad_l - kernel) / stride + 1 == out) return pad_l;
  const std::int64_t pad_r = (out - 1) * stride + kernel - in - pad_l;
  if (pad_r < 0 || pad_r >= kernel) {
    throw InputError("layer '" + spec.name + "': output size " + std::to_string(out) + " does not follow from input " +
                     std::to_string(in) + ", kernel " + std::to_string(kernel) + ", stride " + std::to_string(stride) +
                     ", padding " + std::to_string(pad_l));
  }
  return pad_r;
}

namespace {

std::string isa_name(dnnl::cpu_isa isa) {
  using dnnl::cpu_isa;
  static constexpr std::pair<cpu_isa, const char*> kNames[] = {{cpu_isa::sse41, "sse41"},
                                                               {cpu_isa::avx, "avx"},
                                                               {cpu_isa::avx2, "avx2"},
                                                               {cpu_isa::avx512_core, "avx512_core"},
                                                               {cpu_isa::avx512_core_vnni, "avx512_core_vnni"},
                                                               {cpu_isa::avx512_core_bf16, "avx512_core_bf16"},
                                                               {cpu_isa::avx512_core_amx, "avx512_core_amx"}};
  for (const auto& [value, name] : kNames) {
    if (value == isa) return name;
  }
  return "isa " + std::to_string(static_cast<int>(isa));
}

std::string openblas_threading() {
  static constexpr EnumNames<3> kNames = {"sequential", "pthreads", "OpenMP"};  // openblas_get_parallel()'s 0, 1, 2
  return std::string(name_of(openblas_get_parallel(), kNames, "unknown threading"));
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options) {
    if (options.threads < 0) {
      throw InputError("cpu back end: threads must be >= 0 (0: all processors), got " +
                       std::to_string(options.threads));
    }
    context_.threads = options.threads > 0 ? options.threads : omp_get_num_procs();
    context_.seed = options.seed;
    // oneDNN's primitive cache does not key on the thread count some kernels fix their work split by at creation
    // (im2col + GEMM convolutions): a layer created at 2 threads after one at 1 got the 1-thread kernel, so `dsgd
    // bench layers` timed LeNet's conv1 at 2 threads as fast as at 1 (0.51 ms against 0.27 ms uncached). Without
    // the cache each layer builds its own primitives, once, at creation.
    static std::once_flag uncached;
    std::call_once(uncached, [] { dnnl::set_primitive_cache_capacity(0); });
  }

  std::string_view name() const override { return "cpu"; }

  std::string description() const override {
    const dnnl_version_t* dnnl = dnnl::version();
    // openblas_get_config() names the version and the kernel set, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Zen".
    return "cpu: oneDNN " + std::to_string(dnnl->major) + "." + std::to_string(dnnl->minor) + "." +
           std::to_string(dnnl->patch) + " (OpenMP runtime, " + isa_name(dnnl::get_effective_cpu_isa()) + "), " +
           openblas_get_config() + " (" + openblas_threading() + " build), " + std::to_string(context_.threads) +
           " OpenMP threads";
  }

  // Zeroed by calloc, which leaves pages fresh from the kernel untouched: a large buffer's pages are then faulted
  // in by the kernel that first writes them -- on whichever thread runs it, in a numeric simulation side by side
  // with other ranks' -- not all at once by a memset in the thread that builds the network (docs/time-to-accuracy.md
  // "Cost"). The block's own address sits just below the aligned pointer, for release().
  float* allocate(std::size_t count) override {
    if (count == 0) return nullptr;
    constexpr std::size_t kAlignment = 64;  // a cache line and an AVX-512 vector
    constexpr std::size_t kHeader = kAlignment + sizeof(void*);
    if (count > (SIZE_MAX - 2 * kHeader) / sizeof(float)) throw std::bad_alloc();
    // Whole vectors: a kernel may load the last one in full.
    const std::size_t bytes = (count * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
    void* block = std::calloc(1, bytes + kHeader);
    if (block == nullptr) throw std::bad_alloc();
    const auto first = reinterpret_cast<std::uintptr_t>(block) + sizeof(void*);
    auto* data = reinterpret_cast<float*>((first + kAlignment - 1) / kAlignment * kAlignment);
    reinterpret_cast<void**>(data)[-1] = block;
    return data;
  }

  void release(float* data) override {
    if (data != nullptr) std::free(reinterpret_cast<void**>(data)[-1]);
  }

  void copy_to_device(float* device, const float* host, std::size_t count) override { copy(device, host, count); }
  void copy_to_host(float* host, const float* device, std::size_t count) override { copy(host, device, count); }
  void copy(float* destination, const float* source, std::size_t count) override {
    if (count > 0 && destination != source) std::memcpy(destination, source, count * sizeof(float));
  }
  void synchronize() override {}

  std::unique_ptr<Layer> create_layer(const LayerSpec& spec, int batch) override {
    return create_layer_from("cpu", makers_, spec, batch);
  }

  void axpby(float a, const float* x, float b, float* y, std::size_t n) override {
    ScopedThreads threads(context_.threads);
    const auto count = static_cast<std::int64_t>(n);
    // Element-wise, so the result does not depend on the thread count. Small vectors stay on one thread: a
    // parallel region costs a few microseconds.
    if (b == 0.0f) {  // BLAS convention: y is overwritten, never read (it may hold NaN)
#pragma omp parallel for simd schedule(static) if (count > (1 << 16))
      for (std::int64_t i = 0; i < count; ++i) y[i] = a * x[i];
    } else {
#pragma omp parallel for simd schedule(static) if (count > (1 << 16))
      for (std::int64_t i = 0; i < count; ++i) y[i] = a * x[i] + b * y[i];
    }
  }

  double sum_of_squares(const float* x, std::size_t n) override {
    ScopedThreads threads(context_.threads);
    // Fixed blocks summed in index order, in double, then the blocks in order: the same bits for any thread count.
    constexpr std::size_t kBlock = 4096;
    const auto blocks = static_cast<std::int64_t>((n + kBlock - 1) / kBlock);
    std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::size_t begin = static_cast<std::size_t>(b) * kBlock;
      const std::size_t end = std::min(n, begin + kBlock);
      double sum = 0;
      for (std::size_t i = begin; i < end; ++i) sum += static_cast<double>(x[i]) * x[i];
      partial[static_cast<std::size_t>(b)] = sum;
    }
    double total = 0;
    for (const double sum : partial) total += sum;
    return total;
  }

  double softmax_cross_entropy(const float* logits, const float* labels, int batch, int classes, float* grad_logits,
                               int* correct) override {
    DSGD_ENFORCE_GT(batch, 0);
    DSGD_ENFORCE_GT(classes, 0);
    // Sequential over rows: the loss is summed in a fixed order (deterministic), and even 64 x 1000 classes is
    // tens of microseconds, below the cost of a parallel region's imbalance.
    double loss_sum = 0;
    int right = 0;
    const float inverse_batch = 1.0f / static_cast<float>(batch);
    for (int row = 0; row < batch; ++row) {
      const float* x = logits + static_cast<std::size_t>(row) * classes;
      const float label_value = labels[row];
      const int label = static_cast<int>(label_value);
      if (!(label_value >= 0.0f) || static_cast<float>(label) != label_value || label >= classes) {
        throw InputError("softmax cross-entropy: label " + std::to_string(label_value) + " of row " +
                         std::to_string(row) + " is not a class index in [0, " + std::to_string(classes) + ")");
      }
      int arg_max = 0;
      for (int c = 1; c < classes; ++c) {
        if (x[c] > x[arg_max]) arg_max = c;
      }
      const float max = x[arg_max];
      double sum = 0;
      for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(x[c] - max));
      loss_sum += std::log(sum) - static_cast<double>(x[label] - max);
      if (arg_max == label) ++right;
      if (grad_logits != nullptr) {
        float* g = grad_logits + static_cast<std::size_t>(row) * classes;
        const double inverse_sum = 1.0 / sum;
        for (int c = 0; c < classes; ++c) {
          const auto p = static_cast<float>(std::exp(static_cast<double>(x[c] - max)) * inverse_sum);
          g[c] = (p - (c == label ? 1.0f : 0.0f)) * inverse_batch;
        }
      }
    }
    if (correct != nullptr) *correct = right;
    return loss_sum / batch;
  }

 private:
  Context context_;
  // After context_, which the makers are bound to.
  LayerMakers makers_ = bind_layer_makers(std::ref(context_), make_convolution, make_pooling, make_relu, make_lrn,
                                          make_batch_norm, make_inner_product, make_dropout, make_softmax);
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace dsgd::nn::cpu
