#pragma once
// Internals of the CPU back end shared by its layer files: the oneDNN engine and stream, the thread count, and a
// base class with the bookkeeping every layer repeats. Not a public header (it pulls in dnnl.hpp).

#include <cstdint>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/host_threads.hpp"

namespace dsgd::nn::cpu {

// What every CPU layer needs from its back end. Owned by the back end, which outlives its layers.
struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  int threads = 1;
  std::uint64_t seed = 1;
};

// The back end's `threads` for one call (core/nn/host_threads.hpp).
using ScopedThreads = HostThreads;

// oneDNN's default scratchpad is a buffer of the thread that created the primitive (thread-local), so a primitive
// run on another thread finds none and crashes -- and a numeric simulation runs a rank's kernels on whichever of its
// threads is free (simulate/simgrid/kernel_pool.hpp). So every primitive here is created with this attribute and
// owns its scratchpad (Primitive): one per primitive instead of one per thread, the same results.
dnnl::primitive_attr own_scratchpad();

// A primitive and the scratchpad it owns (own_scratchpad()), which execute() passes along.
class Primitive {
 public:
  Primitive() = default;
  // `pd` must have been created with own_scratchpad().
  Primitive(const dnnl::primitive_desc_base& pd, const dnnl::engine& engine);
  void execute(const dnnl::stream& stream, std::unordered_map<int, dnnl::memory> args) const;

 private:
  dnnl::primitive primitive_;
  dnnl::memory scratchpad_;  // empty where the primitive needs none
};

// spec(), batch() and parameter_count() for every CPU layer.
class CpuLayer : public Layer {
 public:
  CpuLayer(Context& context, const LayerSpec& spec, int batch) : context_(context), spec_(spec), batch_(batch) {}
  const LayerSpec& spec() const override { return spec_; }
  int batch() const override { return batch_; }
  std::size_t parameter_count() const override { return static_cast<std::size_t>(spec_.parameters); }

 protected:
  // Runs `primitive` on the back end's stream and waits for it.
  void run(const Primitive& primitive, const std::unordered_map<int, dnnl::memory>& args) {
    primitive.execute(context_.stream, args);
    context_.stream.wait();
  }
  std::int64_t in_elements() const { return batch_ * spec_.input.elements(); }
  std::int64_t out_elements() const { return batch_ * spec_.output.elements(); }

  Context& context_;
  LayerSpec spec_;
  int batch_;
};

// A primitive's data tensors, unbound (pointers set per call): src and diff_src over the input's descriptor, dst
// and diff_dst over the output's.
struct DataMemory {
  DataMemory() = default;
  DataMemory(const dnnl::memory::desc& input, const dnnl::memory::desc& output, const dnnl::engine& engine);
  dnnl::memory src, dst, diff_src, diff_dst;
};

// NCHW descriptors of a layer's input and output for `batch` images.
dnnl::memory::desc nchw(int batch, const Shape& shape);

// A memory object over `md` whose pointer is set per call (set_data_handle); nothing is allocated.
dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& engine);

// Sets the pointer of an unbound memory object; oneDNN takes void*, even for inputs it only reads.
void bind(dnnl::memory& memory, const float* data);

// A tensor as the caller holds it (plain layout, pointer set per call) and as a primitive wants it (possibly a
// blocked layout such as nChw16c, which oneDNN's AVX-512 kernels prefer). When the two layouts are equal no
// buffer or reorder exists and the caller's memory is used directly. The direction is fixed at construction.
class Staged {
 public:
  enum class Direction { kIn, kOut };
  Staged() = default;
  Staged(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted, Direction direction,
         const dnnl::engine& engine);

  // An input: binds `data` and reorders it into the wanted layout; returns the memory to pass to the primitive.
  dnnl::memory& in(dnnl::stream& stream, const float* data);
  // An output: binds `data`; returns the memory the primitive writes; call out_done() after the primitive.
  dnnl::memory& out(float* data);
  void out_done(dnnl::stream& stream);

 private:
  dnnl::memory plain_;
  dnnl::memory wanted_;  // empty when the layouts are equal
  Primitive reorder_;
};

// Right padding that makes (in + pad_l + pad_r - kernel) / stride + 1 == out: pad_l itself when that fits
// (floor rounding), more for Caffe's ceil-rounded pooling, whose last window may hang over the input.
// Throws InputError naming the layer when no padding fits.
std::int64_t right_padding(const LayerSpec& spec, std::int64_t in, std::int64_t out, std::int64_t kernel,
                           std::int64_t pad_l);

// The layer factories, one per file. Each throws InputError for a spec whose shapes do not fit its geometry.
std::unique_ptr<Layer> make_convolution(Context& context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_pooling(Context& context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_relu(Context& context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_lrn(Context& context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_inner_product(Context& context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_dropout(Context& context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_batch_norm(Context& context, const LayerSpec& spec, int batch);
std::unique_ptr<Layer> make_softmax(Context& context, const LayerSpec& spec, int batch);

}  // namespace dsgd::nn::cpu
