#include "core/data/sparse_presets.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <system_error>

#include "core/data/libsvm.hpp"
#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/splitmix.hpp"

namespace dsgd::data {
namespace {

// SplitMix64 as a stream, with the few samplers the generators need written out so that a seed gives the same
// bits with any standard library, given the same C math library (std:: distributions are implementation-defined).
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    const std::uint64_t out = splitmix64(state_);
    state_ += 0x9e3779b97f4a7c15ULL;
    return out;
  }
  // Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in {0, ..., n - 1}; the modulo bias (n / 2^64) is far below anything measured here.
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  // Standard normal, Box-Muller (both values of a pair used).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));  // 1 - u in (0, 1]: log is finite
    const double angle = 2.0 * std::numbers::pi * uniform();
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

 private:
  std::uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// One independent stream per purpose, so changing how one part draws does not shift the others.
enum class Purpose : std::uint64_t { kLengths = 1, kPopularity, kRows, kHiddenModel, kLabelNoise };
Random stream(std::uint64_t seed, Purpose purpose) {
  return Random(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(purpose))));
}

// Row lengths from a log-normal with the preset's spread, scaled to the target total, Table III's minimum and
// maximum placed once each at random rows, then nudged by +-1 until the total is `target` exactly.
std::vector<std::uint32_t> row_lengths(const SparsePreset& preset, std::size_t rows, std::size_t features,
                                       std::int64_t target, Random& rng) {
  const auto lo = static_cast<double>(preset.min_row_nnz);
  const auto hi = static_cast<double>(std::min(preset.max_row_nnz, features));
  const double sigma = preset.row_nnz_sigma;
  const double mu = std::log(preset.avg_row_nnz) - sigma * sigma / 2;  // E[exp(mu + sigma Z)] = avg
  std::vector<double> raw(rows);
  for (double& x : raw) x = std::exp(mu + sigma * rng.normal());

  // Clipping at [lo, hi] moves the mean; a few rescalings bring it back before the exact fix below.
  double scale = 1;
  for (int round = 0; round < 4; ++round) {
    double sum = 0;
    for (const double x : raw) sum += std::clamp(std::round(x * scale), lo, hi);
    scale *= static_cast<double>(target) / sum;
  }
  std::vector<std::uint32_t> lengths(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    lengths[i] = static_cast<std::uint32_t>(std::clamp(std::round(raw[i] * scale), lo, hi));
  }
  std::vector<bool> fixed(rows, false);
  if (rows >= 2) {
    const std::size_t at_min = rng.below(rows);
    std::size_t at_max = rng.below(rows - 1);
    if (at_max >= at_min) ++at_max;
    lengths[at_min] = static_cast<std::uint32_t>(lo);
    lengths[at_max] = static_cast<std::uint32_t>(hi);
    fixed[at_min] = fixed[at_max] = true;
  }
  std::int64_t missing = target;
  for (const std::uint32_t n : lengths) missing -= n;
  // Sweeps from a random start; each changes a row by at most 1, so the shape of the distribution survives.
  const std::size_t start = rows > 0 ? rng.below(rows) : 0;
  for (std::size_t step = 0; missing != 0 && step < rows * 64; ++step) {
    const std::size_t i = (start + step) % rows;
    if (fixed[i]) continue;
    if (missing > 0 && lengths[i] < hi) {
      ++lengths[i];
      --missing;
    } else if (missing < 0 && lengths[i] > lo) {
      --lengths[i];
      ++missing;
    }
  }
  return lengths;
}

// Zipf-Mandelbrot popularity (rank + q)^-1 over `features`, ranks spread over the index space by a permutation
// (popular words are not the first columns of a vocabulary). Draws by inverting the continuous CDF: one exp each.
class Popularity {
 public:
  Popularity(std::size_t features, double offset, Random& rng)
      : rank_to_feature_(features), idf_(features), offset_(offset) {
    for (std::size_t r = 0; r < features; ++r) rank_to_feature_[r] = static_cast<std::uint32_t>(r);
    for (std::size_t r = features; r > 1; --r) std::swap(rank_to_feature_[r - 1], rank_to_feature_[rng.below(r)]);
    log_span_ = std::log((static_cast<double>(features) + offset) / offset);
    // Inverse document frequency grows with rarity: log of the popularity ratio to the most popular feature.
    for (std::size_t r = 0; r < features; ++r) {
      idf_[rank_to_feature_[r]] = static_cast<float>(1.0 + std::log((static_cast<double>(r) + offset) / offset));
    }
  }
  std::uint32_t draw(Random& rng) const {
    const double rank = offset_ * std::exp(rng.uniform() * log_span_) - offset_;
    const auto r = std::min(static_cast<std::size_t>(rank), rank_to_feature_.size() - 1);
    return rank_to_feature_[r];
  }
  float idf(std::uint32_t feature) const { return idf_[feature]; }

 private:
  std::vector<std::uint32_t> rank_to_feature_;
  std::vector<float> idf_;
  double offset_;
  double log_span_ = 0;
};

// Text and binary rows: `length` distinct features by popularity; repeats of a feature are its term frequency.
void fill_popular_rows(SparseDataset& out, const SparsePreset& preset, const std::vector<std::uint32_t>& lengths,
                       std::uint64_t seed) {
  Random popularity_rng = stream(seed, Purpose::kPopularity);
  const Popularity popularity(out.features, preset.zipf_offset, popularity_rng);
  Random rng = stream(seed, Purpose::kRows);
  // Per feature, side by side so that a draw costs one cache miss: the row it was last drawn in (row + 1) and how
  // often in that row.
  struct Seen {
    std::uint32_t row = 0;
    std::uint32_t count = 0;
  };
  std::vector<Seen> seen(out.features);
  std::vector<std::uint32_t> chosen;
  const bool text = preset.shape == SparseShape::kText;
  for (std::size_t row = 0; row < lengths.size(); ++row) {
    const auto mark = static_cast<std::uint32_t>(row + 1);
    chosen.clear();
    while (chosen.size() < lengths[row]) {
      const std::uint32_t f = popularity.draw(rng);
      if (seen[f].row != mark) {
        seen[f] = {mark, 1};
        chosen.push_back(f);
      } else {
        ++seen[f].count;
      }
    }
    std::sort(chosen.begin(), chosen.end());
    double norm2 = 0;
    const std::size_t first = out.value.size();
    for (const std::uint32_t f : chosen) {
      // tf-idf with sublinear tf, as text collections on the LIBSVM site are built; rows then get unit L2 norm.
      const float value =
          text ? static_cast<float>(1.0 + std::log(static_cast<double>(seen[f].count))) * popularity.idf(f) : 1.0f;
      out.index.push_back(f);
      out.value.push_back(value);
      norm2 += double{value} * double{value};
    }
    if (text) {
      const double inverse_norm = 1.0 / std::sqrt(norm2);
      for (std::size_t k = first; k < out.value.size(); ++k) {
        out.value[k] = static_cast<float>(out.value[k] * inverse_norm);
      }
    }
    out.row_begin.push_back(out.index.size());
  }
}

// UCI connect-4: legal positions after 8 plies, 4 pieces each, dropped into random non-full columns of the 6 x 7
// board. Cell c's state s (0 x, 1 o, 2 blank) is feature 3c + s, so every row has exactly 42 ones.
void fill_connect4_rows(SparseDataset& out, std::size_t rows, std::uint64_t seed) {
  constexpr int kColumns = 7;
  constexpr int kHeight = 6;
  constexpr int kPlies = 8;
  constexpr std::uint32_t kBlank = 2;
  Random rng = stream(seed, Purpose::kRows);
  for (std::size_t row = 0; row < rows; ++row) {
    std::array<std::uint32_t, kColumns * kHeight> board;
    board.fill(kBlank);
    std::array<int, kColumns> height{};
    for (int ply = 0; ply < kPlies; ++ply) {
      std::size_t column = rng.below(kColumns);
      while (height[column] == kHeight) column = rng.below(kColumns);  // 8 pieces never fill two columns
      board[static_cast<std::size_t>(height[column]++ * kColumns) + column] = static_cast<std::uint32_t>(ply % 2);
    }
    for (std::uint32_t cell = 0; cell < board.size(); ++cell) {
      out.index.push_back(3 * cell + board[cell]);
      out.value.push_back(1.0f);
    }
    out.row_begin.push_back(out.index.size());
  }
}

// covtype (LIBSVM's scaled covtype.binary): 10 continuous cartographic values in (0, 1], then one of 4 wilderness
// areas (features 10-13) and one of 40 soil types (14-53). Three continuous ones are sometimes exactly 0, as the
// real aspect, distance to water and afternoon hill shade are; their rates give Table III's 11.945 non-zeros per
// row, and one row has all three at 0 for its minimum of 9.
void fill_covtype_rows(SparseDataset& out, std::size_t rows, std::uint64_t seed) {
  struct Continuous {
    double mean, spread, zero_rate;
  };
  constexpr std::array<Continuous, 10> kContinuous = {{{0.55, 0.12, 0},      // elevation
                                                       {0.43, 0.30, 0.007},  // aspect
                                                       {0.22, 0.10, 0},      // slope
                                                       {0.20, 0.15, 0.040},  // horizontal distance to water
                                                       {0.28, 0.08, 0},      // vertical distance to water
                                                       {0.33, 0.22, 0},      // horizontal distance to roads
                                                       {0.83, 0.10, 0},      // hill shade 9am
                                                       {0.87, 0.08, 0},      // hill shade noon
                                                       {0.56, 0.15, 0.008},  // hill shade 3pm
                                                       {0.28, 0.18, 0}}};    // distance to fire points
  constexpr std::array<double, 4> kWilderness = {0.45, 0.05, 0.44, 0.06};
  constexpr std::uint32_t kSoilTypes = 40;
  Random rng = stream(seed, Purpose::kRows);
  const std::size_t all_zero_row = rows > 0 ? rng.below(rows) : 0;
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::uint32_t j = 0; j < kContinuous.size(); ++j) {
      const Continuous& c = kContinuous[j];
      const double value = std::clamp(c.mean + c.spread * rng.normal(), 1.0 / 256, 1.0);
      const bool zero = c.zero_rate > 0 && (row == all_zero_row || rng.uniform() < c.zero_rate);
      if (zero) continue;
      out.index.push_back(j);
      out.value.push_back(static_cast<float>(value));
    }
    double u = rng.uniform();
    std::uint32_t area = 0;
    while (area + 1 < kWilderness.size() && u >= kWilderness[area]) u -= kWilderness[area++];
    out.index.push_back(10 + area);
    out.value.push_back(1.0f);
    // Soil types: a few common, many rare (squared uniform skews towards the low numbers).
    const double v = rng.uniform();
    out.index.push_back(14 + std::min(kSoilTypes - 1, static_cast<std::uint32_t>(v * v * kSoilTypes)));
    out.value.push_back(1.0f);
    out.row_begin.push_back(out.index.size());
  }
}

// y = sign(w* . x + noise). w*'s weights are normal, scaled by their feature's document frequency (the share of
// rows holding it): with unit-norm rows and lambda = 1/n, a label decided by rare features cannot be learned without
// a large |w| (the optimum's loss stays near log 2), while in real categorisation tasks common topic words carry
// the signal. The direction of the mean row is projected out of w*, so the mean score is 0 and the classes are
// balanced without a bias term (the model has none). The noise, a fraction of the scores' spread, flips the labels
// of rows near the boundary, so the optimum's loss is not 0.
void draw_labels(SparseDataset& out, double noise, std::uint64_t seed) {
  const std::size_t rows = out.row_begin.size() - 1;  // labels come last: rows() counts them
  const double n = static_cast<double>(std::max<std::size_t>(rows, 1));
  struct Column {
    double value_sum = 0;
    std::uint32_t rows = 0;
  };
  std::vector<Column> columns(out.features);
  for (std::size_t k = 0; k < out.nnz(); ++k) {
    columns[out.index[k]].value_sum += out.value[k];
    ++columns[out.index[k]].rows;
  }
  Random rng = stream(seed, Purpose::kHiddenModel);
  std::vector<double> hidden(out.features);
  double along = 0;
  double mean_norm2 = 0;
  for (std::size_t f = 0; f < out.features; ++f) {
    const double mean = columns[f].value_sum / n;
    hidden[f] = rng.normal() * (columns[f].rows / n);
    along += hidden[f] * mean;
    mean_norm2 += mean * mean;
  }
  if (mean_norm2 > 0) {
    for (std::size_t f = 0; f < out.features; ++f) hidden[f] -= along / mean_norm2 * (columns[f].value_sum / n);
  }
  std::vector<double> score(rows, 0.0);
  double sum = 0;
  double sum2 = 0;
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::uint64_t k = out.row_begin[row]; k < out.row_begin[row + 1]; ++k) {
      score[row] += hidden[out.index[k]] * out.value[k];
    }
    sum += score[row];
    sum2 += score[row] * score[row];
  }
  const double spread = std::sqrt(std::max(0.0, sum2 / n - (sum / n) * (sum / n)));
  Random noise_rng = stream(seed, Purpose::kLabelNoise);
  out.label.resize(rows);
  for (std::size_t row = 0; row < rows; ++row) {
    out.label[row] = score[row] + noise * spread * noise_rng.normal() >= 0 ? 1.0f : -1.0f;
  }
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const SparsePreset& p : sparse_presets()) names.push_back(p.name);
  return names;
}

constexpr std::string_view kLibsvmPrefix = "libsvm:";
constexpr std::string_view kFashionBinary = "fashion-mnist-binary";
constexpr std::size_t kFashionReducedRows = 20'000;

SparseDataset load_fashion_binary(std::string_view name, PresetSize size, const std::filesystem::path& root) {
  int positive = 0;
  if (name.size() > kFashionBinary.size()) {
    const std::string_view text = name.substr(kFashionBinary.size() + 1);
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), positive);
    if (text.empty() || error != std::errc{} || end != text.data() + text.size()) {
      throw InputError("data set '" + std::string(name) + "': class '" + std::string(text) +
                       "' is not an integer (Fashion-MNIST's classes are 0..9)");
    }
  }
  Dataset images = load_dataset("fashion-mnist", Split::kTrain, root);
  if (size == PresetSize::kReduced && images.size() > kFashionReducedRows) {
    // The IDX files are already in random class order, so the first rows are a fair sample.
    images.labels.resize(kFashionReducedRows);
    images.images.resize(kFashionReducedRows * images.image_size());
  }
  SparseDataset out = one_vs_rest(images, positive);
  // Every image scaled to unit L2 norm, as the text sets of seed 003 Table III come: with lambda = 1/n the raw
  // pixels (norms near 10) leave the problem almost unregularised and nearly separable, and closeness to the optimum
  // (a relative gap) then asks SGD for an absolute precision its step schedule does not reach in tens of passes.
  for (std::size_t row = 0; row < out.rows(); ++row) {
    double squares = 0;
    for (std::uint64_t k = out.row_begin[row]; k < out.row_begin[row + 1]; ++k) {
      squares += static_cast<double>(out.value[k]) * out.value[k];
    }
    if (squares <= 0) continue;
    const auto scale = static_cast<float>(1.0 / std::sqrt(squares));
    for (std::uint64_t k = out.row_begin[row]; k < out.row_begin[row + 1]; ++k) out.value[k] *= scale;
  }
  out.name = std::string(kFashionBinary) + ":" + std::to_string(positive) + " (" + std::string(preset_size_name(size)) +
             ", " + std::to_string(out.rows()) + " training images)";
  return out;
}

}  // namespace

std::string_view shape_name(SparseShape shape) {
  static constexpr EnumNames<4> kNames = {"text", "binary", "connect4", "covtype"};  // SparseShape's order
  return name_of(shape, kNames);
}

const std::vector<SparsePreset>& sparse_presets() {
  // Table III's columns, then the reduced size and the generator knobs. Spreads follow the ratio of the table's
  // maximum to its average (news20 36x, real-sim 68x: heavy tails; RCV1 ~20x; w8a ~10x).
  static const std::vector<SparsePreset> presets = {
      {"news20-like", "news20.binary", SparseShape::kText, 19'996, 1'355'191, 9'097'916, 1, 16'423, 454.987, 10'000,
       677'596, 0.9, 20, 0.3},
      {"rcv1-v2-like", "RCV1-v2", SparseShape::kText, 781'265, 276'544, 60'534'218, 4, 1'585, 77.482, 40'000, 276'544,
       0.6, 20, 0.3},
      {"rcv1-test-like", "RCV1-v1-test", SparseShape::kText, 677'399, 47'236, 49'556'258, 4, 1'224, 73.157, 40'000,
       47'236, 0.6, 20, 0.3},
      {"real-sim-like", "real-sim", SparseShape::kText, 72'309, 20'958, 3'709'083, 1, 3'484, 51.295, 40'000, 20'958,
       0.8, 20, 0.3},
      {"w8a-like", "w8a", SparseShape::kBinary, 64'700, 300, 753'862, 1, 114, 11.652, 40'000, 300, 0.5, 10, 0.3},
      {"connect4-like", "connect4", SparseShape::kConnect4, 67'557, 126, 2'837'394, 42, 42, 42.0, 40'000, 126, 0, 0,
       0.3},
      {"covtype-like", "covtype", SparseShape::kCovtype, 581'012, 54, 6'940'438, 9, 12, 11.945, 50'000, 54, 0, 0, 0.3},
  };
  return presets;
}

const SparsePreset& find_sparse_preset(std::string_view name) {
  for (const SparsePreset& p : sparse_presets()) {
    if (p.name == name) return p;
  }
  throw UnknownNameError("sparse preset", name, preset_names());
}

std::string_view preset_size_name(PresetSize size) { return size == PresetSize::kFull ? "full" : "reduced"; }

PresetSize parse_preset_size(std::string_view name) {
  if (name == "reduced") return PresetSize::kReduced;
  if (name == "full") return PresetSize::kFull;
  throw UnknownNameError("preset size", name, {"reduced", "full"});
}

std::size_t preset_rows(const SparsePreset& preset, PresetSize size) {
  return size == PresetSize::kFull ? preset.examples : preset.reduced_examples;
}

std::size_t preset_features(const SparsePreset& preset, PresetSize size) {
  return size == PresetSize::kFull ? preset.features : preset.reduced_features;
}

SparseDataset generate_preset(const SparsePreset& preset, PresetSize size, std::uint64_t seed) {
  const std::size_t rows = preset_rows(preset, size);
  SparseDataset out;
  out.name = preset.name + " (" + std::string(preset_size_name(size)) + ", seed " + std::to_string(seed) + ")";
  out.features = preset_features(preset, size);
  const auto expected_nnz = static_cast<std::size_t>(preset.avg_row_nnz * static_cast<double>(rows) * 1.01);
  out.row_begin.reserve(rows + 1);
  out.index.reserve(expected_nnz);
  out.value.reserve(expected_nnz);
  switch (preset.shape) {
    case SparseShape::kText:
    case SparseShape::kBinary: {
      // At full size Table III's exact non-zero count (its average is rounded to 3 decimals).
      const auto target_nnz = size == PresetSize::kFull ? static_cast<std::int64_t>(preset.nnz)
                                                        : std::llround(preset.avg_row_nnz * static_cast<double>(rows));
      Random rng = stream(seed, Purpose::kLengths);
      fill_popular_rows(out, preset, row_lengths(preset, rows, out.features, target_nnz, rng), seed);
      break;
    }
    case SparseShape::kConnect4:
      fill_connect4_rows(out, rows, seed);
      break;
    case SparseShape::kCovtype:
      fill_covtype_rows(out, rows, seed);
      break;
  }
  draw_labels(out, preset.label_noise, seed);
  return out;
}

std::vector<DatasetEntry> sparse_data_catalog() {
  std::vector<DatasetEntry> entries;
  for (const SparsePreset& p : sparse_presets()) {
    entries.push_back({p.name, "generated like seed 003 Table III's " + p.source + ": " + std::to_string(p.examples) +
                                   " x " + std::to_string(p.features) + " (reduced " +
                                   std::to_string(p.reduced_examples) + " x " + std::to_string(p.reduced_features) +
                                   "), " + std::string(shape_name(p.shape)) + " rows"});
  }
  entries.push_back({"libsvm:FILE", "a LIBSVM file, plain or gzip, labels -1/+1 or 0/1"});
  entries.push_back({"fashion-mnist-binary[:CLASS]",
                     "Fashion-MNIST training images, CLASS (default 0) against the rest, 784 pixel features"});
  return entries;
}

SparseDataset load_sparse(std::string_view name, PresetSize size, std::uint64_t seed,
                          const std::filesystem::path& datasets_root) {
  if (name.starts_with(kLibsvmPrefix)) return read_libsvm(std::filesystem::path(name.substr(kLibsvmPrefix.size())));
  if (name == kFashionBinary || (name.starts_with(kFashionBinary) && name[kFashionBinary.size()] == ':')) {
    return load_fashion_binary(name, size, datasets_root);
  }
  for (const SparsePreset& p : sparse_presets()) {
    if (p.name == name) return generate_preset(p, size, seed);
  }
  std::vector<std::string> valid = preset_names();
  valid.push_back("libsvm:FILE");
  valid.push_back("fashion-mnist-binary[:CLASS]");
  throw UnknownNameError("sparse data set", name, valid);
}

}  // namespace dsgd::data
