// SUMMA (van de Geijn and Watts 1995) on a 2-D grid of ranks, the broadcast-based algorithm dMath's cyclic one is
// compared with (docs/dmath.md "SUMMA"): for each panel of the inner dimension, its owners broadcast A's panel
// along their grid row and B's panel along their grid column, and every rank adds the panel product to its block.

#include <algorithm>
#include <set>

#include "algorithms/dmath/distributed_gemm.hpp"

namespace dsgd::algorithms::dmath {

namespace {

// Binomial-tree broadcast among `members` (world ranks) from members[root]; blocking. `data` may be null on a Comm
// without payloads.
void group_broadcast(Comm& comm, const std::vector<int>& members, int root, int me, float* data, std::size_t floats,
                     Tag tag, Category category) {
  const int size = static_cast<int>(members.size());
  if (size == 1) return;
  const int relative = (me - root + size) % size;
  const auto member = [&](int rel) { return members[static_cast<std::size_t>((rel + root) % size)]; };
  const std::size_t bytes = floats * sizeof(float);
  int mask = 1;
  while (mask < size) {
    if ((relative & mask) != 0) {
      comm.recv(member(relative - mask), tag, data, bytes, category);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (relative + mask < size) comm.send(member(relative + mask), tag, data, bytes, category);
  }
}

// Which of `parts` ranges of `extent` holds index `at`.
int owner_of(std::int64_t extent, int parts, std::int64_t at) {
  for (int part = 0; part < parts; ++part) {
    const Range range = block_range(extent, parts, part);
    if (at < range.begin + range.count) return part;
  }
  throw InternalError("summa: index " + std::to_string(at) + " past " + std::to_string(extent));
}

}  // namespace

void summa_multiply(Comm& comm, const GemmShape& shape, std::span<const float> a_block, std::span<const float> b_block,
                    std::span<float> c_block, LocalGemm& gemm, const GemmOptions& options) {
  const Grid grid = square_grid(comm.size());
  if (shape.m < grid.rows || shape.n < grid.cols || shape.k < std::max(grid.rows, grid.cols)) {
    throw InputError("summa gemm: a " + std::to_string(shape.m) + " x " + std::to_string(shape.k) + " by " +
                     std::to_string(shape.k) + " x " + std::to_string(shape.n) + " product cannot be split over a " +
                     std::to_string(grid.rows) + " x " + std::to_string(grid.cols) + " grid of ranks");
  }
  if (options.panel_width < 1) {
    throw InputError("summa gemm: the panel width must be at least 1, got " + std::to_string(options.panel_width));
  }
  const int row = comm.rank() / grid.cols;
  const int col = comm.rank() % grid.cols;
  const LocalBlocks mine = local_blocks(GemmAlgorithm::kSumma, shape, comm.size(), comm.rank());
  const bool payload = comm.has_payload();
  const auto expect = [&](std::span<const float> data, const Range& rows, const Range& cols, const char* what) {
    if (payload && static_cast<std::int64_t>(data.size()) != rows.count * cols.count) {
      throw InputError(std::string("summa gemm: ") + what + " holds " + std::to_string(data.size()) +
                       " floats, its block needs " + std::to_string(rows.count * cols.count));
    }
  };
  expect(a_block, mine.a_rows, mine.a_cols, "A's block");
  expect(b_block, mine.b_rows, mine.b_cols, "B's block");
  expect(c_block, mine.c_rows, mine.c_cols, "C's block");
  std::fill(c_block.begin(), c_block.end(), 0.0F);

  std::vector<int> row_members;  // this grid row, by column
  std::vector<int> col_members;  // this grid column, by row
  for (int c = 0; c < grid.cols; ++c) row_members.push_back(row * grid.cols + c);
  for (int r = 0; r < grid.rows; ++r) col_members.push_back(r * grid.cols + col);

  // Panels never straddle an owner: the inner dimension is cut where A's column split or B's row split cuts it,
  // then into pieces of at most panel_width.
  std::set<std::int64_t> cuts = {0, shape.k};
  for (int c = 0; c < grid.cols; ++c) cuts.insert(block_range(shape.k, grid.cols, c).begin);
  for (int r = 0; r < grid.rows; ++r) cuts.insert(block_range(shape.k, grid.rows, r).begin);
  const std::vector<std::int64_t> bounds(cuts.begin(), cuts.end());

  const std::int64_t width_max = options.panel_width;
  std::vector<float> a_panel(payload ? static_cast<std::size_t>(mine.a_rows.count * width_max) : 0);
  std::vector<float> b_panel(payload ? static_cast<std::size_t>(width_max * mine.b_cols.count) : 0);
  for (std::size_t segment = 0; segment + 1 < bounds.size(); ++segment) {
    for (std::int64_t k0 = bounds[segment]; k0 < bounds[segment + 1]; k0 += width_max) {
      const std::int64_t width = std::min(width_max, bounds[segment + 1] - k0);
      const int a_owner = owner_of(shape.k, grid.cols, k0);  // a grid column
      const int b_owner = owner_of(shape.k, grid.rows, k0);  // a grid row
      if (payload && col == a_owner) {
        for (std::int64_t i = 0; i < mine.a_rows.count; ++i) {
          std::copy_n(a_block.data() + i * mine.a_cols.count + (k0 - mine.a_cols.begin), width,
                      a_panel.data() + i * width);
        }
      }
      if (payload && row == b_owner) {
        std::copy_n(b_block.data() + (k0 - mine.b_rows.begin) * mine.b_cols.count, width * mine.b_cols.count,
                    b_panel.data());
      }
      group_broadcast(comm, row_members, a_owner, col, payload ? a_panel.data() : nullptr,
                      static_cast<std::size_t>(mine.a_rows.count * width), options.tag, options.transfer_category);
      group_broadcast(comm, col_members, b_owner, row, payload ? b_panel.data() : nullptr,
                      static_cast<std::size_t>(width * mine.b_cols.count), options.tag + 1, options.transfer_category);
      block_product(comm, options, false, mine.c_rows.count, mine.c_cols.count, width,
                    payload ? a_panel.data() : nullptr, width, payload ? b_panel.data() : nullptr, mine.c_cols.count,
                    payload ? c_block.data() : nullptr, mine.c_cols.count, gemm);
    }
  }
}

}  // namespace dsgd::algorithms::dmath
