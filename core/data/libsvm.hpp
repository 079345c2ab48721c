#pragma once
// LIBSVM's sparse text format (Chang and Lin; the format of seed 003's data sets on the LIBSVM site):
//   LABEL INDEX:VALUE INDEX:VALUE ...      one example per line, indices 1-based and strictly increasing
// Labels are -1/+1 (also written "+1" or as 1.0) or 0/1, where 0 reads as -1; one file uses one of the two (or, for
// regression, any finite float: LibsvmOptions::regression). Blank
// lines are skipped and '#' starts a comment (SVMlight's convention). Files may be gzip-compressed.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/data/sparse_dataset.hpp"

namespace dsgd::data {

// The largest feature index read: liblinear (core/linear/optimum.cpp) counts features in an int.
inline constexpr std::uint64_t kMaxLibsvmFeatures = 2147483647;
// Bytes per feature of the dense vectors trained over a data set: liblinear's trust-region Newton solver keeps about
// eight double vectors of the dimension (w, g, s, r, d, Hs and two temporaries) and dsgd's methods float vectors
// (weights, gradients, a Hogwild copy per thread): read_libsvm refuses a dimension whose vectors would not fit.
inline constexpr double kDenseBytesPerFeature = 8 * 8 + 4 * 4;

struct LibsvmOptions {
  // The model's dimension. 0: the largest index in the file. Otherwise a declared count (a test set read with its
  // training set's dimension): an index beyond it is an error.
  std::size_t features = 0;
  // Labels are any finite float (a regression target: Lasso, algorithms/strads/), not classes.
  bool regression = false;
};

// Reads a LIBSVM file, gzip or plain (core/data/binary_file.hpp). The result is named after `path` and has 0-based
// indices. Throws InputError "PATH: no such file" when it is missing, the errors of parse_libsvm, and InputError
// when features x kDenseBytesPerFeature is more than this machine has available.
SparseDataset read_libsvm(const std::filesystem::path& path, const LibsvmOptions& options = {});

// Parses LIBSVM text; `source_name` names it in the result and in errors. Throws InputError with one line
// "SOURCE:LINE: what" for: index 0 (indices are 1-based), an index that is not a positive integer, a value that is
// not a finite number, indices that do not strictly increase, a pair without ':', a label other than -1/+1/0/1 or
// mixing the -1 and 0 conventions, an index beyond options.features, and a text with no examples.
SparseDataset parse_libsvm(std::string_view text, const std::string& source_name, const LibsvmOptions& options = {});

// `data` in LIBSVM text: labels "+1"/"-1" (with options.regression: as values), 1-based indices, values in the
// shortest form that reads back exactly.
std::string to_libsvm(const SparseDataset& data, const LibsvmOptions& options = {});

}  // namespace dsgd::data
