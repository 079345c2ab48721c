// Hybrid SGD: dMath/Expresso's hybrid parallelism (seed 001 §I and §VII-A; Krizhevsky 2014, "One weird trick"):
// the convolutions data-parallel, the fully-connected head model-parallel. Every worker runs the layers before the
// first inner product on its own batch; the head then runs once on the global batch (the workers' batches in rank
// order), each worker holding a slice of every inner product's weights -- the model is spread over the workers, as
// dMath's is, and no worker holds the head whole. docs/dmath.md "Hybrid parallelism" has the long story.
//
//  * Inner products alternate between two splits. A column-split layer owns a block of output neurons (rows of W)
//    and needs the whole input; a row-split layer owns a block of input features (columns of W) -- the outputs the
//    column-split layer before it owns -- and its partial outputs are summed by a ring allreduce.
//  * The first inner product's input is the convolutions' output, split by batch: its blocks roll around the ring
//    (rank r sends to r + 1) while each block's product runs -- the pipelined cyclic roll of docs/dmath.md with
//    the activations as the rolled operand, the smaller one at the seed's batches (AlexNet fc6 at batch 1024: 9.4 M
//    floats against 37.7 M weights) -- and the blocks are kept for the backward pass (dMath's "keep what you've
//    seen"): the weight gradient needs no message. The input's gradient is reduce-scattered back to batch rows.
//  * A head ending column-split gathers its logits' columns; the loss (mean over the global batch) is computed on
//    every worker. The convolutions' gradients are then summed by a ring allreduce and every worker applies the
//    same momentum update to them, while each updates only its own slices of the head.
// The gradient is sync-sgd's for the same batches (the mean over the global batch); sums differ in order only.
// ReLU and dropout run on whatever split their input has; dropout's mask is a hash of the seed, the layer, the
// iteration and the element's global index, so it does not depend on the number of workers.

#include <cblas.h>

#include <algorithm>
#include <functional>

#include "algorithms/entries.hpp"
#include "algorithms/trainer.hpp"
#include "core/nn/host_threads.hpp"
#include "core/nn/random.hpp"

namespace dsgd::algorithms {

namespace {

constexpr Tag kRollTag = 300;           // the first inner product's input, rolling
constexpr Tag kScatterTag = 301;        // its gradient, reduce-scattered to batch rows
constexpr Tag kGatherTag = 302;         // a column-split head's logits
constexpr Tag kRecordTag = 303;         // the head's slices to rank 0 after a round
constexpr float kDropKeepScale = 2.0F;  // nn's dropout: p = 0.5, inverted scaling
constexpr double kFloatBytes = 4;

enum class Split { kNone, kColumns, kRows };

// One layer of the head, as this rank runs it.
struct HeadLayer {
  const LayerSpec* spec = nullptr;
  std::size_t index = 0;  // in the model's layers (and the packed layout)
  Split split = Split::kNone;
  std::int64_t in = 0;  // features in and out, whole
  std::int64_t out = 0;
  Shard own;                       // column split: own output neurons; row split: own input features
  std::size_t shard_offset = 0;    // its parameters in this rank's slice vector: weights, then biases
  std::int64_t width = 0;          // columns of its output this rank holds (B rows each)
  std::int64_t column_offset = 0;  // the global feature index of the first of them
  bool rolls_input = false;        // the first inner product
};

std::size_t weights(const HeadLayer& layer) {
  return static_cast<std::size_t>(layer.split == Split::kColumns ? layer.own.count * layer.in
                                                                 : layer.own.count * layer.out);
}
std::size_t biases(const HeadLayer& layer) {
  return layer.split == Split::kColumns ? layer.own.count : static_cast<std::size_t>(layer.out);
}

bool is_head_kind(LayerKind kind) {
  return kind == LayerKind::kInnerProduct || kind == LayerKind::kReLU || kind == LayerKind::kDropout;
}

// The head of `model` as rank `rank` of `workers` runs it: every layer from the first inner product on but the final
// softmax (the loss), and the size of the rank's slice vector.
struct HeadPlan {
  std::vector<HeadLayer> layers;
  std::size_t slice_count = 0;
};

HeadPlan plan_head(const ModelSpec& model, int workers, int rank, const std::string& algorithm) {
  const std::size_t last = model.layers.size() - 1;
  if (model.layers.empty() || model.layers.back().kind != LayerKind::kSoftmax) {
    throw InputError(algorithm + ": model '" + model.name + "' does not end in a softmax loss");
  }
  std::size_t first = last;
  while (first > 0 && is_head_kind(model.layers[first - 1].kind)) --first;
  while (first < last && model.layers[first].kind != LayerKind::kInnerProduct) ++first;
  if (first == 0 || first == last) {
    throw InputError(algorithm + ": model '" + model.name +
                     "' has no fully-connected head after its first layer (inner products, ReLUs and dropouts "
                     "before the softmax) to split over the workers");
  }
  HeadPlan plan;
  Split next = Split::kColumns;
  std::int64_t width = model.layers[first].input.elements();
  std::int64_t column_offset = 0;
  for (std::size_t i = first; i < last; ++i) {
    HeadLayer layer;
    layer.spec = &model.layers[i];
    layer.index = i;
    layer.in = layer.spec->input.elements();
    layer.out = layer.spec->output.elements();
    if (layer.spec->kind == LayerKind::kInnerProduct) {
      layer.split = next;
      layer.rolls_input = i == first;
      if (next == Split::kColumns) {
        layer.own = shard_of(static_cast<std::size_t>(layer.out), workers, rank);
        width = static_cast<std::int64_t>(layer.own.count);
        column_offset = static_cast<std::int64_t>(layer.own.offset);
      } else {
        // Its input features are the outputs the column-split layer before it owns.
        layer.own = shard_of(static_cast<std::size_t>(layer.in), workers, rank);
        width = layer.out;
        column_offset = 0;
      }
      next = next == Split::kColumns ? Split::kRows : Split::kColumns;
      layer.shard_offset = plan.slice_count;
      plan.slice_count += weights(layer) + biases(layer);
    }
    layer.width = width;
    layer.column_offset = column_offset;
    plan.layers.push_back(layer);
  }
  return plan;
}

float* at(std::vector<float>& v, std::size_t offset) { return v.empty() ? nullptr : v.data() + offset; }

int wrap(int index, int ranks) { return (index % ranks + ranks) % ranks; }

// A ring allgather of P blocks of `buffer` (block j = [starts[j], starts[j + 1]), this rank's own filled; `buffer`
// empty in a size-only world): step t sends block r - t to the right and receives block r - t - 1 from the left.
// on_block(j), if set, runs for every block once it is here -- the own block first, each while the next one is on
// its way (the roll's overlap).
void ring_allgather_blocks(Comm& comm, std::vector<float>& buffer, const std::vector<std::size_t>& starts, Tag tag,
                           const std::function<void(int)>& on_block) {
  const int ranks = comm.size();
  const int rank = comm.rank();
  auto bytes = [&](int j) { return (starts[j + 1] - starts[j]) * sizeof(float); };
  for (int step = 0; step < ranks - 1; ++step) {
    const int in = wrap(rank - step - 1, ranks);
    const int out = wrap(rank - step, ranks);
    auto receive = comm.irecv(wrap(rank - 1, ranks), tag, at(buffer, starts[in]), bytes(in), Category::kGpuGpuPara);
    auto sending = comm.isend(wrap(rank + 1, ranks), tag, at(buffer, starts[out]), bytes(out), Category::kGpuGpuPara);
    if (on_block) on_block(out);
    receive->wait();
    sending->wait();
  }
  if (on_block) on_block(wrap(rank + 1, ranks));
}

class HybridSgd final : public Algorithm {
 public:
  explicit HybridSgd(Trainer& trainer) {
    const Hyperparameters& hyper = trainer.hyper();
    const std::string& name = trainer.info().name;
    if (hyper.period != 1 || hyper.lars || hyper.per_layer) {
      throw InputError(name +
                       " splits the head's weights over the workers and sums every iteration: it takes no "
                       "--period, --lars or --per-layer");
    }
    const ModelSpec& model = trainer.model();
    HeadPlan plan = plan_head(model, trainer.workers(), trainer.comm().rank(), name);
    head_ = std::move(plan.layers);
    slice_count_ = plan.slice_count;
    global_batch_ = static_cast<std::int64_t>(hyper.batch) * trainer.workers();
    classes_ = model.classes;
    // The ring's blocks: the rolled input by batch rows, the logits by each rank's columns (B of them each).
    const int workers = trainer.workers();
    const auto rows = static_cast<std::size_t>(global_batch_);
    const auto block = static_cast<std::size_t>(hyper.batch * head_.front().in);
    for (int r = 0; r <= workers; ++r) {
      roll_starts_.push_back(static_cast<std::size_t>(r) * block);
      column_starts_.push_back(r == workers ? rows * static_cast<std::size_t>(classes_)
                                            : rows * shard_of(static_cast<std::size_t>(classes_), workers, r).offset);
    }
    const std::size_t conv_end = trainer.layout()[head_.front().index].offset;
    conv_ = {0, conv_end};
    conv_sgd_ = trainer.make_sgd(hyper.momentum, conv_);
    head_sgd_ = trainer.make_sgd(hyper.momentum, {0, slice_count_});
    if (!trainer.has_data()) return;
    std::int64_t widest = head_.front().in;
    for (const HeadLayer& layer : head_) {
      widest = std::max({widest, layer.width, layer.in});
      outputs_.emplace_back(static_cast<std::size_t>(global_batch_ * layer.width), 0.0F);
      masks_.emplace_back(layer.spec->kind == LayerKind::kDropout ? outputs_.back().size() : 0, 0.0F);
    }
    rolled_.assign(static_cast<std::size_t>(global_batch_ * head_.front().in), 0.0F);
    logits_.assign(static_cast<std::size_t>(global_batch_ * classes_), 0.0F);
    logit_blocks_.assign(logits_.size(), 0.0F);
    labels_.assign(static_cast<std::size_t>(global_batch_), 0.0F);
    gradient_.assign(static_cast<std::size_t>(global_batch_ * widest), 0.0F);
    gradient_in_.assign(gradient_.size(), 0.0F);
    slices_.assign(slice_count_, 0.0F);
    slice_gradients_.assign(slice_count_, 0.0F);
    for (const HeadLayer& layer : head_) copy_slice(trainer, layer, true, trainer.parameters(), slices_.data());
  }

  void visit_state(Trainer&, StateVisitor& state) override {
    state.optimiser("conv", *conv_sgd_);
    state.optimiser("head", *head_sgd_);
    state.floats("head slices", slices_);
  }

  void run_round(Trainer& trainer, std::int64_t iterations) override {
    for (std::int64_t i = 0; i < iterations; ++i) iteration(trainer);
    record_head(trainer);
  }

 private:
  // Between the packed parameters (whole layer) and this rank's slice vector: to_slice copies the owned part out.
  static void copy_slice(Trainer& trainer, const HeadLayer& layer, bool to_slice, float* packed, float* slices) {
    if (layer.split == Split::kNone) return;
    const nn::ParameterSlice& where = trainer.layout()[layer.index];
    float* w = packed + where.offset;
    float* b = w + layer.in * layer.out;
    float* slice = slices + layer.shard_offset;
    auto move = [to_slice](float* whole, float* part, std::size_t count) {
      if (to_slice) {
        std::copy_n(whole, count, part);
      } else {
        std::copy_n(part, count, whole);
      }
    };
    if (layer.split == Split::kColumns) {
      move(w + layer.own.offset * static_cast<std::size_t>(layer.in), slice, weights(layer));
      move(b + layer.own.offset, slice + weights(layer), layer.own.count);
      return;
    }
    for (std::int64_t o = 0; o < layer.out; ++o) {
      move(w + static_cast<std::size_t>(o * layer.in) + layer.own.offset, slice + o * layer.own.count, layer.own.count);
    }
    move(b, slice + weights(layer), static_cast<std::size_t>(layer.out));
  }

  void iteration(Trainer& trainer) {
    const float* features = trainer.forward_prefix(head_.front().index);
    const double loss = forward_head(trainer, features);
    backward_head(trainer);
    trainer.backward_prefix(loss, {});
    Comm& comm = trainer.comm();
    allreduce(comm, {trainer.gradients(), conv_.count}, AllreduceAlgorithm::kRing,
              {Category::kGpuGpuPara, kFirstCollectiveTag});
    trainer.sgd_step(*conv_sgd_, Category::kGpuUpdate, conv_);
    const auto n = static_cast<double>(slice_count_);
    trainer.elementwise(4.0 * n, 20.0 * n, Category::kGpuUpdate,
                        [this] { head_sgd_->step(slices_.data(), slice_gradients_.data()); });
  }

  // A GEMM of the head, C (m x n) = A (m x k) B (k x n), as one compute step with its shape (a processor priced by
  // shape prices it so), on the rank's threads (core/nn/host_threads.hpp): OpenBLAS left at its default takes every
  // core from every worker of a process.
  static void product(Trainer& trainer, GemmShape gemm, const std::function<void()>& kernel) {
    LayerKernel shape;
    shape.gemm = gemm;
    shape.flops = gemm.flops();
    shape.bytes = kFloatBytes * static_cast<double>(gemm.m * gemm.k + gemm.k * gemm.n + gemm.m * gemm.n);
    ComputeStep step;
    step.flops = shape.flops;
    step.bytes = shape.bytes;
    step.kernels = {&shape, 1};
    step.kernel_class = "gemm";
    step.category = Category::kForwardBackward;
    step.kernel = [kernel, threads = trainer.threads_per_rank()] {
      const nn::HostThreads scoped(threads);
      kernel();
    };
    trainer.comm().compute(step);
  }

  double forward_head(Trainer& trainer, const float* features) {
    Comm& comm = trainer.comm();
    const int batch = trainer.hyper().batch;
    // The global batch's labels, in rank order (tiny: one float per image).
    if (trainer.has_data()) {
      std::fill(labels_.begin(), labels_.end(), 0.0F);
      std::copy(trainer.batch_labels().begin(), trainer.batch_labels().end(),
                labels_.begin() + static_cast<std::ptrdiff_t>(comm.rank() * batch));
    }
    allreduce(comm, {at(labels_, 0), labels_.size()}, AllreduceAlgorithm::kRing,
              {Category::kGpuGpuPara, kFirstCollectiveTag});
    const float* x = features;
    for (std::size_t l = 0; l < head_.size(); ++l) {
      const HeadLayer& layer = head_[l];
      float* y = output(l);
      const float* w = at(slices_, layer.shard_offset);
      const float* b = w == nullptr ? nullptr : w + weights(layer);
      const auto count = static_cast<std::size_t>(global_batch_ * layer.width);
      if (layer.split == Split::kColumns && layer.rolls_input) {
        roll_first_product(trainer, layer, features, w, y);
      } else if (layer.split == Split::kColumns) {
        product(trainer, {global_batch_, layer.width, layer.in}, [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(global_batch_),
                      static_cast<int>(layer.width), static_cast<int>(layer.in), 1.0F, x, static_cast<int>(layer.in), w,
                      static_cast<int>(layer.in), 0.0F, y, static_cast<int>(layer.width));
        });
      } else if (layer.split == Split::kRows) {
        const auto own = static_cast<int>(layer.own.count);
        product(trainer, {global_batch_, layer.out, static_cast<std::int64_t>(layer.own.count)}, [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(global_batch_),
                      static_cast<int>(layer.out), own, 1.0F, x, own, w, own, 0.0F, y, static_cast<int>(layer.out));
        });
        allreduce(comm, {y, count}, AllreduceAlgorithm::kRing, {Category::kGpuGpuPara, kFirstCollectiveTag});
      }
      if (layer.split != Split::kNone) {
        trainer.elementwise(static_cast<double>(count), Category::kForwardBackward,
                            [&] { add_bias(y, b, layer.width); });
      } else if (layer.spec->kind == LayerKind::kReLU) {
        trainer.elementwise(static_cast<double>(count), Category::kForwardBackward, [&] {
          for (std::size_t i = 0; i < count; ++i) y[i] = std::max(x[i], 0.0F);
        });
      } else {
        make_mask(trainer, l);
        const float* mask = mask_of(l);
        trainer.elementwise(static_cast<double>(count), Category::kForwardBackward, [&] {
          for (std::size_t i = 0; i < count; ++i) y[i] = x[i] * mask[i];
        });
      }
      x = y;
    }
    return loss_and_gradient(trainer, x);
  }

  void add_bias(float* y, const float* b, std::int64_t width) const {
    for (std::int64_t n = 0; n < global_batch_; ++n) {
      float* row = y + n * width;
      for (std::int64_t j = 0; j < width; ++j) row[j] += b[j];
    }
  }

  void make_mask(Trainer& trainer, std::size_t l) {
    if (!trainer.has_data()) return;
    const HeadLayer& layer = head_[l];
    const std::uint64_t stream = (nn::mix64(trainer.hyper().seed) ^ nn::name_hash(layer.spec->name)) +
                                 static_cast<std::uint64_t>(trainer.iterations());
    float* mask = masks_[l].data();
    for (std::int64_t n = 0; n < global_batch_; ++n) {
      for (std::int64_t j = 0; j < layer.width; ++j) {
        const auto index = static_cast<std::uint64_t>(n * layer.out + layer.column_offset + j);
        mask[n * layer.width + j] = nn::unit_float(nn::random_bits(stream, index)) < 0.5F ? 0.0F : kDropKeepScale;
      }
    }
  }

  // The first inner product, y (B x own outputs) = X W_rᵀ with X's batch blocks rolling around the ring: block j's
  // product runs while block j - 1 is on its way, and every block stays in rolled_ for the backward pass.
  void roll_first_product(Trainer& trainer, const HeadLayer& layer, const float* features, const float* w, float* y) {
    Comm& comm = trainer.comm();
    const std::int64_t batch = trainer.hyper().batch;
    const std::size_t own = roll_starts_[static_cast<std::size_t>(comm.rank())];
    if (trainer.has_data()) std::copy_n(features, roll_starts_[1], rolled_.data() + own);
    ring_allgather_blocks(comm, rolled_, roll_starts_, kRollTag, [&](int j) {
      product(trainer, {batch, layer.width, layer.in}, [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(batch), static_cast<int>(layer.width),
                    static_cast<int>(layer.in), 1.0F, rolled_.data() + roll_starts_[static_cast<std::size_t>(j)],
                    static_cast<int>(layer.in), w, static_cast<int>(layer.in), 0.0F, y + j * batch * layer.width,
                    static_cast<int>(layer.width));
      });
    });
  }

  // Softmax cross-entropy over the global batch on every worker; leaves dL/dlogits (B x classes) in gradient_.
  double loss_and_gradient(Trainer& trainer, const float* last) {
    const HeadLayer& end = head_.back();
    const float* logits = last;
    if (end.width != classes_) {
      // Column-split logits: each rank's columns, gathered in a ring, then laid out B x classes.
      gather_columns(trainer, last);
      logits = at(logits_, 0);
    }
    double loss = 0;
    trainer.elementwise(3.0 * static_cast<double>(global_batch_ * classes_), Category::kForwardBackward, [&] {
      loss = trainer.host_backend().softmax_cross_entropy(logits, labels_.data(), static_cast<int>(global_batch_),
                                                          static_cast<int>(classes_), gradient_.data(), nullptr);
    });
    return loss;
  }

  void gather_columns(Trainer& trainer, const float* mine) {
    Comm& comm = trainer.comm();
    const int workers = comm.size();
    const auto rank = static_cast<std::size_t>(comm.rank());
    if (logit_blocks_.empty()) {  // a size-only world: the messages alone
      ring_allgather_blocks(comm, logit_blocks_, column_starts_, kGatherTag, {});
      return;
    }
    std::copy_n(mine, column_starts_[rank + 1] - column_starts_[rank], logit_blocks_.data() + column_starts_[rank]);
    ring_allgather_blocks(comm, logit_blocks_, column_starts_, kGatherTag, {});
    for (int r = 0; r < workers; ++r) {
      const Shard columns = shard_of(static_cast<std::size_t>(classes_), workers, r);
      const float* part = logit_blocks_.data() + column_starts_[static_cast<std::size_t>(r)];
      for (std::int64_t n = 0; n < global_batch_; ++n) {
        std::copy_n(part + n * static_cast<std::int64_t>(columns.count), columns.count,
                    logits_.data() + n * classes_ + static_cast<std::int64_t>(columns.offset));
      }
    }
  }

  void backward_head(Trainer& trainer) {
    Comm& comm = trainer.comm();
    const HeadLayer& end = head_.back();
    // gradient_ holds dL/d(the last layer's output) in that layer's split.
    if (end.width != classes_ && trainer.has_data()) {
      for (std::int64_t n = 0; n < global_batch_; ++n) {
        std::copy_n(gradient_.data() + n * classes_ + end.column_offset, end.width,
                    gradient_in_.data() + n * end.width);
      }
      std::swap(gradient_, gradient_in_);
    }
    std::fill(slice_gradients_.begin(), slice_gradients_.end(), 0.0F);
    for (std::size_t l = head_.size(); l-- > 0;) {
      const HeadLayer& layer = head_[l];
      const auto count = static_cast<std::size_t>(global_batch_ * layer.width);
      float* g = at(gradient_, 0);
      const float* y = output(l);
      const float* x = l == 0 ? at(rolled_, 0) : output(l - 1);
      if (layer.spec->kind == LayerKind::kReLU) {
        trainer.elementwise(static_cast<double>(count), Category::kForwardBackward, [&] {
          for (std::size_t i = 0; i < count; ++i) g[i] = y[i] > 0.0F ? g[i] : 0.0F;
        });
        continue;
      }
      if (layer.spec->kind == LayerKind::kDropout) {
        const float* mask = mask_of(l);
        trainer.elementwise(static_cast<double>(count), Category::kForwardBackward, [&] {
          for (std::size_t i = 0; i < count; ++i) g[i] *= mask[i];
        });
        continue;
      }
      const float* w = at(slices_, layer.shard_offset);
      float* dw = at(slice_gradients_, layer.shard_offset);
      float* dx = at(gradient_in_, 0);
      const auto in_width = static_cast<int>(layer.split == Split::kColumns ? layer.in : layer.own.count);
      const auto out_width = static_cast<int>(layer.width);
      const auto n = static_cast<int>(global_batch_);
      // dW = gᵀ x (out_width x in_width), the bias gradient the column sums of g.
      product(trainer, {out_width, in_width, n}, [&] {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_width, in_width, n, 1.0F, g, out_width, x, in_width,
                    0.0F, dw, in_width);
        float* db = dw + weights(layer);
        for (std::int64_t r = 0; r < global_batch_; ++r) {
          for (int j = 0; j < out_width; ++j) db[j] += g[r * out_width + j];
        }
      });
      // dX = g W (B x in_width).
      product(trainer, {n, in_width, out_width}, [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in_width, out_width, 1.0F, g, out_width, w, in_width,
                    0.0F, dx, in_width);
      });
      if (layer.split == Split::kColumns && layer.rolls_input) {
        scatter_to_batch(trainer, layer);
        return;
      }
      if (layer.split == Split::kColumns) {
        // The input was whole on every rank: the partial input gradients sum to the whole one.
        allreduce(comm, {dx, static_cast<std::size_t>(global_batch_ * layer.in)}, AllreduceAlgorithm::kRing,
                  {Category::kGpuGpuPara, kFirstCollectiveTag});
      }
      std::swap(gradient_, gradient_in_);
    }
  }

  // The first inner product's input gradient (partial, B x in on every rank) summed by a ring reduce-scatter over
  // batch blocks: rank r ends with its own block, the gradient of its convolutions' output.
  void scatter_to_batch(Trainer& trainer, const HeadLayer& layer) {
    Comm& comm = trainer.comm();
    const int workers = comm.size();
    const int rank = comm.rank();
    const std::size_t block = static_cast<std::size_t>(trainer.hyper().batch * layer.in);
    auto block_at = [&](std::vector<float>& v, int j) {
      return at(v, static_cast<std::size_t>(wrap(j, workers)) * block);
    };
    std::vector<float> incoming(trainer.has_data() ? block : 0);
    const int right = wrap(rank + 1, workers);
    const int left = wrap(rank - 1, workers);
    // Step t sends block r - t - 1 (summed over the t ranks before) and adds the received one into block r - t - 2;
    // the last step's is block r.
    for (int step = 0; step < workers - 1; ++step) {
      auto receive = comm.irecv(left, kScatterTag, at(incoming, 0), block * sizeof(float), Category::kGpuGpuPara);
      auto sending = comm.isend(right, kScatterTag, block_at(gradient_in_, rank - step - 1), block * sizeof(float),
                                Category::kGpuGpuPara);
      receive->wait();
      sending->wait();
      float* target = block_at(gradient_in_, rank - step - 2);
      trainer.elementwise(static_cast<double>(block), 12.0 * static_cast<double>(block), Category::kGpuGpuPara, [&] {
        for (std::size_t i = 0; i < block; ++i) target[i] += incoming[i];
      });
    }
    float* out = trainer.prefix_output_gradient();
    if (out != nullptr) std::copy_n(block_at(gradient_in_, rank), block, out);
  }

  // After a round: every rank's slices to rank 0, which puts them in its packed parameters (the model of record).
  void record_head(Trainer& trainer) {
    Comm& comm = trainer.comm();
    if (comm.rank() != 0) {
      comm.send(0, kRecordTag, at(slices_, 0), slice_count_ * sizeof(float), Category::kGpuGpuPara);
      return;
    }
    if (trainer.has_data()) {
      for (const HeadLayer& layer : head_) copy_slice(trainer, layer, false, trainer.parameters(), slices_.data());
    }
    for (int source = 1; source < comm.size(); ++source) {
      const HeadPlan theirs = plan_head(trainer.model(), trainer.workers(), source, trainer.info().name);
      std::vector<float> slices(trainer.has_data() ? theirs.slice_count : 0);
      comm.recv(source, kRecordTag, at(slices, 0), theirs.slice_count * sizeof(float), Category::kGpuGpuPara);
      if (slices.empty()) continue;
      for (const HeadLayer& layer : theirs.layers)
        copy_slice(trainer, layer, false, trainer.parameters(), slices.data());
    }
  }

  // Layer l's output and dropout mask (null in a size-only world).
  float* output(std::size_t l) { return outputs_.empty() ? nullptr : outputs_[l].data(); }
  const float* mask_of(std::size_t l) const { return masks_.empty() ? nullptr : masks_[l].data(); }

  Shard conv_;
  std::vector<HeadLayer> head_;
  std::size_t slice_count_ = 0;
  std::int64_t global_batch_ = 0;
  std::int64_t classes_ = 0;
  std::unique_ptr<nn::Sgd> conv_sgd_;
  std::unique_ptr<nn::Sgd> head_sgd_;
  std::vector<float> slices_;  // this rank's slices of the head's parameters
  std::vector<float> slice_gradients_;
  // Host work buffers (empty in a size-only world).
  std::vector<float> rolled_;  // the first inner product's whole input, B x in (the kept blocks)
  std::vector<std::vector<float>> outputs_;
  std::vector<std::vector<float>> masks_;
  std::vector<float> logits_;
  std::vector<float> logit_blocks_;         // the logits' column blocks, rank after rank, as the ring gathers them
  std::vector<std::size_t> roll_starts_;    // ring_allgather_blocks' blocks of rolled_
  std::vector<std::size_t> column_starts_;  // and of logit_blocks_
  std::vector<float> labels_;
  std::vector<float> gradient_;
  std::vector<float> gradient_in_;
};

}  // namespace

AlgorithmEntry hybrid_sgd_entry() {
  return {{"hybrid-sgd",
           "dMath's hybrid parallelism: convolutions data-parallel, the fully-connected head split over the workers",
           /*has_master=*/false, /*synchronous=*/true, /*shardable=*/false, /*compresses=*/false,
           /*whole_layers=*/false},
          [](Trainer& trainer) { return std::make_unique<HybridSgd>(trainer); }};
}

}  // namespace dsgd::algorithms
