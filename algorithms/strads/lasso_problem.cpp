#include "algorithms/strads/lasso_problem.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>
#include <string_view>

#include "core/atomic_file.hpp"
#include "core/data/libsvm.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/nn/random.hpp"

namespace dsgd::algorithms::strads {

namespace {

// Independent streams of the generator, so that changing one part of a shape leaves the others' draws alone.
enum Stream : std::uint64_t { kLatent = 1, kNoise = 2, kSupport = 3, kSign = 4, kTargetNoise = 5 };

std::uint64_t stream_of(std::uint64_t seed, Stream stream, std::uint64_t index) {
  return nn::mix64(seed ^ nn::mix64(static_cast<std::uint64_t>(stream) << 56 ^ index));
}

// A standard normal draw (Box-Muller over two uniform draws of the counter-based source).
double gaussian(std::uint64_t stream, std::uint64_t index) {
  const double u1 = (static_cast<double>(nn::random_bits(stream, 2 * index) >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(nn::random_bits(stream, 2 * index + 1) >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double uniform(std::uint64_t stream, std::uint64_t index) {
  return static_cast<double>(nn::random_bits(stream, index) >> 11) * 0x1.0p-53;
}

void check_shape(const LassoShape& shape) {
  if (shape.rows == 0 || shape.features == 0) throw InputError("lasso: a problem needs rows and features");
  if (shape.rows > 0xFFFFFFFFULL) throw InputError("lasso: more than 2^32 - 1 rows");
  if (shape.group == 0) throw InputError("lasso: a group has at least one column");
  if (!(shape.correlation >= 0 && shape.correlation < 1)) {
    throw InputError("lasso: correlation " + std::to_string(shape.correlation) + " is not in [0, 1)");
  }
  if (!(shape.density > 0 && shape.density <= 1)) {
    throw InputError("lasso: density " + std::to_string(shape.density) + " is not in (0, 1]");
  }
  if (shape.nonzeros > shape.features) {
    throw InputError("lasso: " + std::to_string(shape.nonzeros) + " nonzeros of beta* but only " +
                     std::to_string(shape.features) + " features");
  }
  if (!(shape.noise >= 0) || !std::isfinite(shape.noise)) throw InputError("lasso: noise must be >= 0");
}

// Scales every column to unit L2 norm (an all-zero column stays zero).
void normalise_columns(LassoProblem& problem) {
  for (std::size_t a = 0; a < problem.features; ++a) {
    double squares = 0;
    for (std::uint64_t k = problem.column_begin[a]; k < problem.column_begin[a + 1]; ++k) {
      squares += static_cast<double>(problem.value[k]) * problem.value[k];
    }
    if (squares == 0) continue;
    const double scale = 1.0 / std::sqrt(squares);
    for (std::uint64_t k = problem.column_begin[a]; k < problem.column_begin[a + 1]; ++k) {
      problem.value[k] = static_cast<float>(problem.value[k] * scale);
    }
  }
}

// A compressed sparse matrix (rows by CSR, or columns by CSC): offsets per line, then each entry's index across.
struct Compressed {
  std::vector<std::uint64_t> begin;
  std::vector<std::uint32_t> index;
  std::vector<float> value;
};

// The same matrix compressed the other way (`across` lines of it): count, place; each new line's indices come out
// increasing, as the old lines are visited in order.
Compressed transpose(std::span<const std::uint64_t> begin, std::span<const std::uint32_t> index,
                     std::span<const float> value, std::size_t across) {
  Compressed out;
  out.begin.assign(across + 1, 0);
  for (const std::uint32_t a : index) ++out.begin[a + 1];
  for (std::size_t a = 0; a < across; ++a) out.begin[a + 1] += out.begin[a];
  out.index.resize(index.size());
  out.value.resize(value.size());
  std::vector<std::uint64_t> next(out.begin.begin(), out.begin.end() - 1);
  for (std::size_t line = 0; line + 1 < begin.size(); ++line) {
    for (std::uint64_t k = begin[line]; k < begin[line + 1]; ++k) {
      const std::uint64_t at = next[index[k]]++;
      out.index[at] = static_cast<std::uint32_t>(line);
      out.value[at] = value[k];
    }
  }
  return out;
}

// LIBSVM's rows as a problem's columns, and back.
LassoProblem from_rows(const data::SparseDataset& rows) {
  // The values once more by column, and two offsets per feature (the columns' and the placing cursor).
  check_available_memory(static_cast<double>(rows.nnz()) * (sizeof(std::uint32_t) + sizeof(float)) +
                             static_cast<double>(rows.features + 1) * 2 * sizeof(std::uint64_t),
                         "lasso: " + rows.name + ": its columns need ",
                         " (8 bytes per value and 16 per feature, beside its rows)");
  Compressed columns = transpose(rows.row_begin, rows.index, rows.value, rows.features);
  LassoProblem problem;
  problem.rows = rows.rows();
  problem.features = rows.features;
  problem.column_begin = std::move(columns.begin);
  problem.row = std::move(columns.index);
  problem.value = std::move(columns.value);
  problem.y = rows.label;
  return problem;
}

data::SparseDataset to_rows(const LassoProblem& problem) {
  Compressed rows = transpose(problem.column_begin, problem.row, problem.value, problem.rows);
  data::SparseDataset data;
  data.name = problem.name;
  data.features = problem.features;
  data.row_begin = std::move(rows.begin);
  data.index = std::move(rows.index);
  data.value = std::move(rows.value);
  data.label = problem.y;
  return data;
}

}  // namespace

LassoShape lasso_preset(const std::string& name) {
  LassoShape shape;
  if (name == "tiny") {
    shape = {100, 60, 3, 0.5, 1.0, 6, 0.1, 1};
  } else if (name == "small") {
    shape = {1000, 2000, 10, 0.5, 1.0, 20, 0.1, 1};
  } else if (name == "correlated") {
    shape = {1000, 2000, 20, 0.95, 1.0, 20, 0.1, 1};
  } else if (name == "large") {
    shape = {10000, 100000, 10, 0.5, 0.01, 100, 0.1, 1};
  } else {
    throw UnknownNameError("lasso problem", name, lasso_preset_names());
  }
  return shape;
}

std::vector<std::string> lasso_preset_names() { return {"tiny", "small", "correlated", "large"}; }

LassoProblem generate_lasso(const LassoShape& shape, const std::string& name) {
  check_shape(shape);
  const double expected_nnz = static_cast<double>(shape.rows) * static_cast<double>(shape.features) * shape.density;
  check_available_memory(expected_nnz * 1.1 * (sizeof(float) + sizeof(std::uint32_t)),
                         "lasso: " + name + " (" + std::to_string(shape.rows) + " x " + std::to_string(shape.features) +
                             ", density " + std::to_string(shape.density) + ") needs an estimated ");
  LassoProblem problem;
  problem.name = name;
  problem.rows = shape.rows;
  problem.features = shape.features;
  problem.column_begin.reserve(shape.features + 1);
  problem.column_begin.push_back(0);
  problem.row.reserve(static_cast<std::size_t>(expected_nnz * 1.05));
  problem.value.reserve(static_cast<std::size_t>(expected_nnz * 1.05));
  const double shared = std::sqrt(shape.correlation);
  const double own = std::sqrt(1.0 - shape.correlation);
  std::vector<std::uint32_t> support;
  std::vector<double> latent;
  for (std::size_t a = 0; a < shape.features; ++a) {
    const std::size_t group = a / shape.group;
    if (a % shape.group == 0) {
      // The group's rows and latent column: every column of the group shares both.
      support.clear();
      latent.clear();
      for (std::size_t i = 0; i < shape.rows; ++i) {
        if (shape.density >= 1 || uniform(stream_of(shape.seed, kSupport, group), i) < shape.density) {
          support.push_back(static_cast<std::uint32_t>(i));
          latent.push_back(gaussian(stream_of(shape.seed, kLatent, group), i));
        }
      }
    }
    const std::uint64_t noise = stream_of(shape.seed, kNoise, a);
    for (std::size_t k = 0; k < support.size(); ++k) {
      problem.row.push_back(support[k]);
      problem.value.push_back(static_cast<float>(shared * latent[k] + own * gaussian(noise, support[k])));
    }
    problem.column_begin.push_back(problem.row.size());
  }
  normalise_columns(problem);
  // beta*: `nonzeros` entries of +-1 spread evenly over the features, so each lands in its own group while there
  // are groups enough.
  std::vector<double> signal(shape.rows, 0.0);
  for (std::size_t k = 0; k < shape.nonzeros; ++k) {
    const std::size_t a = k * shape.features / shape.nonzeros;
    const double beta = uniform(stream_of(shape.seed, kSign, 0), k) < 0.5 ? -1.0 : 1.0;
    const auto rows = problem.column_rows(a);
    const auto values = problem.column_values(a);
    for (std::size_t j = 0; j < rows.size(); ++j) signal[rows[j]] += beta * values[j];
  }
  double squares = 0;
  for (const double s : signal) squares += s * s;
  const double noise_sd = shape.noise * std::sqrt(squares / static_cast<double>(shape.rows));
  problem.y.resize(shape.rows);
  for (std::size_t i = 0; i < shape.rows; ++i) {
    problem.y[i] = static_cast<float>(signal[i] + noise_sd * gaussian(stream_of(shape.seed, kTargetNoise, 0), i));
  }
  return problem;
}

LassoProblem load_lasso(const std::string& spec) {
  constexpr std::string_view kLibsvm = "libsvm:";
  if (spec.rfind(kLibsvm, 0) == 0) {
    data::LibsvmOptions options;
    options.regression = true;
    LassoProblem problem = from_rows(data::read_libsvm(spec.substr(kLibsvm.size()), options));
    problem.name = spec;
    normalise_columns(problem);
    return problem;
  }
  const std::size_t colon = spec.find(':');
  const std::string preset = spec.substr(0, colon);
  LassoShape shape = lasso_preset(preset);
  if (colon != std::string::npos) {
    const std::string seed = spec.substr(colon + 1);
    const auto [end, error] = std::from_chars(seed.data(), seed.data() + seed.size(), shape.seed);
    if (seed.empty() || error != std::errc{} || end != seed.data() + seed.size()) {
      throw InputError("lasso problem '" + spec + "': '" + seed + "' is not a seed (PRESET:SEED)");
    }
  }
  return generate_lasso(shape, spec);
}

void write_lasso_libsvm(const LassoProblem& problem, const std::filesystem::path& path) {
  data::LibsvmOptions options;
  options.regression = true;
  write_file_atomically(path, data::to_libsvm(to_rows(problem), options));
}

double lambda_max(const LassoProblem& problem) {
  double largest = 0;
  for (std::size_t a = 0; a < problem.features; ++a) {
    const auto rows = problem.column_rows(a);
    const auto values = problem.column_values(a);
    double dot = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) dot += static_cast<double>(values[k]) * problem.y[rows[k]];
    largest = std::max(largest, std::abs(dot));
  }
  return largest;
}

double lasso_objective(const LassoProblem& problem, std::span<const double> beta, double lambda) {
  DSGD_ENFORCE(beta.size() == problem.features, "lasso_objective: beta of the wrong size");
  std::vector<double> residual(problem.y.begin(), problem.y.end());
  double l1 = 0;
  for (std::size_t a = 0; a < problem.features; ++a) {
    if (beta[a] == 0) continue;
    l1 += std::abs(beta[a]);
    const auto rows = problem.column_rows(a);
    const auto values = problem.column_values(a);
    for (std::size_t k = 0; k < rows.size(); ++k) residual[rows[k]] -= beta[a] * values[k];
  }
  double squares = 0;
  for (const double r : residual) squares += r * r;
  return 0.5 * squares + lambda * l1;
}

double column_dot(const LassoProblem& problem, std::size_t a, std::size_t b) {
  const auto rows_a = problem.column_rows(a);
  const auto rows_b = problem.column_rows(b);
  const auto values_a = problem.column_values(a);
  const auto values_b = problem.column_values(b);
  double dot = 0;
  if (rows_a.size() == problem.rows && rows_b.size() == problem.rows) {
    // Both dense: the rows coincide, no merge needed.
    for (std::size_t i = 0; i < rows_a.size(); ++i) dot += static_cast<double>(values_a[i]) * values_b[i];
    return dot;
  }
  for (std::size_t i = 0, j = 0; i < rows_a.size() && j < rows_b.size();) {
    if (rows_a[i] < rows_b[j]) {
      ++i;
    } else if (rows_b[j] < rows_a[i]) {
      ++j;
    } else {
      dot += static_cast<double>(values_a[i++]) * values_b[j++];
    }
  }
  return dot;
}

LassoProblem row_shard(const LassoProblem& problem, std::size_t begin, std::size_t end) {
  DSGD_ENFORCE(begin <= end && end <= problem.rows, "row_shard: rows out of range");
  LassoProblem shard;
  shard.name = problem.name + " rows " + std::to_string(begin) + ".." + std::to_string(end);
  shard.rows = end - begin;
  shard.features = problem.features;
  shard.column_begin.reserve(problem.features + 1);
  shard.column_begin.push_back(0);
  for (std::size_t a = 0; a < problem.features; ++a) {
    const auto rows = problem.column_rows(a);
    const auto values = problem.column_values(a);
    const auto first = std::lower_bound(rows.begin(), rows.end(), static_cast<std::uint32_t>(begin));
    for (auto it = first; it != rows.end() && *it < end; ++it) {
      shard.row.push_back(static_cast<std::uint32_t>(*it - begin));
      shard.value.push_back(values[static_cast<std::size_t>(it - rows.begin())]);
    }
    shard.column_begin.push_back(shard.row.size());
  }
  shard.y.assign(problem.y.begin() + static_cast<std::ptrdiff_t>(begin),
                 problem.y.begin() + static_cast<std::ptrdiff_t>(end));
  return shard;
}

}  // namespace dsgd::algorithms::strads
