#pragma once
// Generated sparse data sets shaped like seed 003 Table III's seven (examples, features, non-zeros per row and their
// spread, kind of values), at the table's size ("full") or a size a 2-core machine trains in seconds ("reduced"),
// and one resolver for every sparse data source a command takes: a preset, a LIBSVM file or Fashion-MNIST as one
// class against the rest. docs/datasets.md lists target and generated statistics.
//
// Labels come from a hidden linear model: y = sign(w* . x + noise), so logistic regression (core/linear/) has
// something to learn and, with the noise, a non-trivial optimum. Generation is seeded and bit-reproducible for a
// seed on a given C library (dsgd's own SplitMix64 stream and samplers, no std:: distributions whose output is
// implementation-defined).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/catalog.hpp"
#include "core/data/sparse_dataset.hpp"

namespace dsgd::data {

// How a preset's rows are made.
enum class SparseShape {
  kText,      // tf-idf-like positive values, unit L2 row norm, Zipf-like feature popularity (news20, RCV1, real-sim)
  kBinary,    // values 1, Zipf-like feature popularity (w8a)
  kConnect4,  // 42 board cells one-hot over {x, o, blank}: exactly 42 of 126 (8-ply positions, as UCI's set)
  kCovtype,   // 10 continuous values in (0, 1] (some exactly 0) + one of 4 wilderness + one of 40 soil types
};
std::string_view shape_name(SparseShape shape);  // "text", "binary", "connect4", "covtype"

struct SparsePreset {
  std::string name;    // "rcv1-test-like"
  std::string source;  // the Table III data set it imitates: "RCV1-v1-test"
  SparseShape shape = SparseShape::kText;
  // Seed 003 Table III (the full size).
  std::size_t examples = 0;
  std::size_t features = 0;
  std::size_t nnz = 0;
  std::size_t min_row_nnz = 0;
  std::size_t max_row_nnz = 0;
  double avg_row_nnz = 0;  // nnz / examples
  // The reduced size: fewer rows; fewer features only where the full dimension is huge (news20).
  std::size_t reduced_examples = 0;
  std::size_t reduced_features = 0;
  // Generator knobs, chosen (not from seed 003): spread of the log-normal row lengths (kText, kBinary), offset q
  // of the Zipf-Mandelbrot popularity (rank + q)^-1, and label noise as a fraction of the scores' spread.
  double row_nnz_sigma = 0;
  double zipf_offset = 0;
  double label_noise = 0;
};

// The seven presets, in Table III's order.
const std::vector<SparsePreset>& sparse_presets();

// The preset called `name`. Throws UnknownNameError listing the presets.
const SparsePreset& find_sparse_preset(std::string_view name);

enum class PresetSize { kReduced, kFull };
std::string_view preset_size_name(PresetSize size);  // "reduced", "full"
// "reduced" or "full"; UnknownNameError otherwise.
PresetSize parse_preset_size(std::string_view name);

// Rows and features a preset has at `size`.
std::size_t preset_rows(const SparsePreset& preset, PresetSize size);
std::size_t preset_features(const SparsePreset& preset, PresetSize size);

// Generates `preset` at `size` from `seed`: the same (preset, size, seed) gives the same bits. Rows reach the table's
// minimum and maximum non-zeros (one row each); text and binary rows hit its average exactly (to rounding),
// covtype's follows from its zero rates. Named "NAME (SIZE, seed S)".
SparseDataset generate_preset(const SparsePreset& preset, PresetSize size, std::uint64_t seed);

// The names load_sparse accepts, for help texts and errors.
std::vector<DatasetEntry> sparse_data_catalog();

// A sparse data set by name:
//   a preset name                   generate_preset(preset, size, seed);
//   "libsvm:FILE"                   read_libsvm(FILE) (size and seed do not apply);
//   "fashion-mnist-binary[:CLASS]"  Fashion-MNIST's training images as CLASS (default 0) against the rest, pixels in
//                                   [0, 1] as features, zeros dropped; the first 20,000 images at reduced size.
// Throws UnknownNameError listing these; InputError for a bad CLASS or file; UnavailableError when the Fashion-MNIST
// package is missing. `datasets_root` as for load_dataset.
SparseDataset load_sparse(std::string_view name, PresetSize size, std::uint64_t seed,
                          const std::filesystem::path& datasets_root = kDebianDatasetsRoot);

}  // namespace dsgd::data
