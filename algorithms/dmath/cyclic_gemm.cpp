// dMath's cyclic GEMM (seed 001 §III, Figs 3-4; docs/dmath.md "Cyclic"): B's row blocks roll around the ring of
// ranks in column panels, each panel's transfer started before the product of the panel before it.

#include <algorithm>
#include <functional>

#include "algorithms/dmath/distributed_gemm.hpp"
#include "core/compression.hpp"

namespace dsgd::algorithms::dmath {

namespace {

// Called for every panel t of every block j of B, in the order this rank holds them; `panel` is the panel's
// rows_j x cols_t floats (row-major), null on a Comm without payloads.
using PanelVisitor = std::function<void(Range rows, Range cols, const float* panel)>;

void check_cyclic_shape(const Comm& comm, const GemmShape& shape, const char* what) {
  if (shape.m < comm.size() || shape.k < comm.size() || shape.n < 1) {
    throw InputError(std::string(what) + ": a " + std::to_string(shape.m) + " x " + std::to_string(shape.k) + " by " +
                     std::to_string(shape.k) + " x " + std::to_string(shape.n) + " product cannot be split " + "over " +
                     std::to_string(comm.size()) + " ranks (m and k must be at least the rank count)");
  }
}

void check_span(std::span<const float> data, std::int64_t floats, bool payload, const char* what) {
  if (payload && static_cast<std::int64_t>(data.size()) != floats) {
    throw InputError(std::string("cyclic gemm: ") + what + " holds " + std::to_string(data.size()) +
                     " floats, its block needs " + std::to_string(floats));
  }
}

int panel_count(const GemmOptions& options, const GemmShape& shape) {
  return static_cast<int>(std::clamp<std::int64_t>(options.panels, 1, shape.n));
}

// The panel layout of a block of B: panel after panel, each row-major, panel `cols` at `stride` x cols.begin
// where `stride` is the largest block's row count (block 0's). A panel's place is then the same for every block,
// so a panel arriving in a buffer never overlaps another panel of the block that is still leaving it.
std::int64_t panel_offset(std::int64_t stride, Range cols) { return stride * cols.begin; }

// Visits every panel of B as this rank sees it: its own block first, then the blocks of ranks r + 1, r + 2, ...
// as they arrive from the right neighbour, each forwarded to the left one. From a full cache, without messages.
void roll(Comm& comm, const GemmShape& shape, std::span<const float> b_rows, const GemmOptions& options,
          BlockCache* cache, const PanelVisitor& visit) {
  const int ranks = comm.size();
  const int rank = comm.rank();
  const bool payload = comm.has_payload();
  const auto rows_of = [&](int block) { return block_range(shape.k, ranks, block); };
  const std::int64_t stride = rows_of(0).count;

  if (cache != nullptr && cache->full) {
    for (int s = 0; s < ranks; ++s) {
      const int block = (rank + s) % ranks;
      const Range rows = rows_of(block);
      for (int t = 0; t < cache->panels; ++t) {
        const Range cols = block_range(shape.n, cache->panels, t);
        visit(rows, cols,
              payload ? cache->blocks[static_cast<std::size_t>(block)].data() + panel_offset(stride, cols) : nullptr);
      }
    }
    return;
  }

  const int panels = panel_count(options, shape);
  const Range own_rows = rows_of(rank);
  check_span(b_rows, own_rows.count * shape.n, payload, "B's row block");
  if (cache != nullptr) {
    cache->forget();
    cache->panels = panels;
    cache->blocks.resize(static_cast<std::size_t>(ranks));
  }
  // Without a cache two buffers alternate (double buffering): a stage computes on one while the next block arrives
  // in the other. Every buffer is sized for the largest block up front, so no request ever sees its buffer move.
  std::vector<float> buffers[2];
  const auto storage = [&](int stage, int block) -> float* {
    if (!payload) return nullptr;
    if (cache != nullptr) {
      auto& kept = cache->blocks[static_cast<std::size_t>(block)];
      kept.resize(static_cast<std::size_t>(stride * shape.n));
      return kept.data();
    }
    auto& buffer = buffers[stage % 2];
    if (buffer.empty()) buffer.resize(static_cast<std::size_t>(stride * shape.n));
    return buffer.data();
  };

  float* current = storage(0, rank);
  if (payload) {  // this rank's block into the panel layout
    for (int t = 0; t < panels; ++t) {
      const Range cols = block_range(shape.n, panels, t);
      float* panel = current + panel_offset(stride, cols);
      for (std::int64_t i = 0; i < own_rows.count; ++i)
        std::copy_n(b_rows.data() + i * shape.n + cols.begin, cols.count, panel + i * cols.count);
    }
  }

  const int left = (rank + ranks - 1) % ranks;
  const int right = (rank + 1) % ranks;
  std::vector<RequestPtr> sends(static_cast<std::size_t>(panels));
  std::vector<RequestPtr> receives(static_cast<std::size_t>(panels));
  // Half-precision transfers (seed 001 sec. IX): each panel leaves as fp16 from a staging buffer and arrives in one,
  // to be widened into its place; the products stay fp32. Conversions are elementwise compute steps.
  const bool half = options.half_transfer;
  const std::size_t element_bytes = half ? sizeof(std::uint16_t) : sizeof(float);
  std::vector<std::vector<std::uint16_t>> send_half(half && payload ? panels : 0);
  std::vector<std::vector<std::uint16_t>> receive_half(half && payload ? panels : 0);
  const auto convert = [&](std::int64_t count, const std::function<void()>& kernel) {
    ComputeStep step;
    step.flops = static_cast<double>(count);
    step.bytes = 6.0 * static_cast<double>(count);  // read a float or a half, write the other
    step.kernel_class = "elementwise";
    step.category = options.transfer_category;
    if (payload) step.kernel = kernel;
    comm.compute(step);
  };
  for (int stage = 0; stage < ranks; ++stage) {
    const int block = (rank + stage) % ranks;
    const int next_block = (block + 1) % ranks;
    const Range rows = rows_of(block);
    const Range next_rows = rows_of(next_block);
    const bool forward = stage + 1 < ranks;
    float* next = forward ? storage(stage + 1, next_block) : nullptr;
    for (int t = 0; t < panels; ++t) {
      const auto slot = static_cast<std::size_t>(t);
      const Range cols = block_range(shape.n, panels, t);
      const std::int64_t count = rows.count * cols.count;
      float* panel = current ? current + panel_offset(stride, cols) : nullptr;
      if (receives[slot]) {  // this panel, posted a stage ago
        receives[slot]->wait();
        if (half) {
          convert(count, [&] {
            for (std::int64_t i = 0; i < count; ++i) panel[i] = from_half(receive_half[slot][i]);
          });
        }
      }
      if (forward) {
        // Where `next` receives this panel, the previous stage's panel was sent from: that send must be done.
        if (sends[slot]) sends[slot]->wait();
        const void* out = panel;
        if (half) {
          if (payload) send_half[slot].resize(static_cast<std::size_t>(count));
          convert(count, [&] {
            for (std::int64_t i = 0; i < count; ++i) send_half[slot][i] = to_half(panel[i]);
          });
          out = payload ? send_half[slot].data() : nullptr;
        }
        const std::int64_t next_count = next_rows.count * cols.count;
        void* in = next ? next + panel_offset(stride, cols) : nullptr;
        if (half && payload) {
          receive_half[slot].resize(static_cast<std::size_t>(next_count));
          in = receive_half[slot].data();
        }
        sends[slot] = comm.isend(left, options.tag + t, out, static_cast<std::size_t>(count) * element_bytes,
                                 options.transfer_category);
        receives[slot] = comm.irecv(right, options.tag + t, in, static_cast<std::size_t>(next_count) * element_bytes,
                                    options.transfer_category);
      } else {
        receives[slot].reset();
      }
      visit(rows, cols, panel);
    }
    current = next;
  }
  for (auto& send : sends) {
    if (send) send->wait();
  }
  if (cache != nullptr) cache->full = true;
}

// out_rows = left_rows op(B) for this rank's rows: op(B) = B (left m_r x k, out m_r x n), or with `transposed` Bᵀ
// (left m_r x n, out m_r x k).
void multiply_rows(Comm& comm, const GemmShape& shape, bool transposed, std::span<const float> left,
                   std::span<const float> b_rows, std::span<float> out, LocalGemm& gemm, const GemmOptions& options,
                   BlockCache* cache) {
  check_cyclic_shape(comm, shape, transposed ? "cyclic gemm (transposed)" : "cyclic gemm");
  const Range my_rows = block_range(shape.m, comm.size(), comm.rank());
  const bool payload = comm.has_payload();
  const std::int64_t left_cols = transposed ? shape.n : shape.k;
  const std::int64_t out_cols = transposed ? shape.k : shape.n;
  check_span(left, my_rows.count * left_cols, payload, transposed ? "G's row block" : "A's row block");
  check_span(out, my_rows.count * out_cols, payload, transposed ? "D's row block" : "C's row block");
  std::fill(out.begin(), out.end(), 0.0F);
  // Forward C[:, cols] += A[:, rows] panel; transposed D[:, rows] += G[:, cols] panelᵀ (the panel is rows x cols,
  // so op(B) = Bᵀ with B stored n x k). `inner` is the product's summed range, `outer` where it lands in `out`.
  roll(comm, shape, b_rows, options, cache, [&](Range rows, Range cols, const float* panel) {
    const Range inner = transposed ? cols : rows;
    const Range outer = transposed ? rows : cols;
    block_product(comm, options, transposed, my_rows.count, outer.count, inner.count,
                  payload ? left.data() + inner.begin : nullptr, left_cols, panel, cols.count,
                  payload ? out.data() + outer.begin : nullptr, out_cols, gemm);
  });
}

}  // namespace

void cyclic_multiply(Comm& comm, const GemmShape& shape, std::span<const float> a_rows, std::span<const float> b_rows,
                     std::span<float> c_rows, LocalGemm& gemm, const GemmOptions& options, BlockCache* cache) {
  multiply_rows(comm, shape, false, a_rows, b_rows, c_rows, gemm, options, cache);
}

void cyclic_multiply_transposed(Comm& comm, const GemmShape& shape, std::span<const float> g_rows,
                                std::span<const float> b_rows, std::span<float> d_rows, LocalGemm& gemm,
                                const GemmOptions& options, BlockCache* cache) {
  multiply_rows(comm, shape, true, g_rows, b_rows, d_rows, gemm, options, cache);
}

}  // namespace dsgd::algorithms::dmath
