#include "core/data/libsvm.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "core/data/binary_file.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/memory.hpp"

namespace dsgd::data {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// The next whitespace-separated token of `line` from `at` (empty at the end); moves `at` past it.
std::string_view next_token(std::string_view line, std::size_t& at) {
  while (at < line.size() && is_blank(line[at])) ++at;
  const std::size_t begin = at;
  while (at < line.size() && !is_blank(line[at])) ++at;
  return line.substr(begin, at - begin);
}

// A finite number filling all of `text`; from_chars takes no leading '+', which LIBSVM files do write ("+1").
template <typename T>
bool parse_number(std::string_view text, T& out) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc{} && end == text.data() + text.size() && std::isfinite(static_cast<double>(out));
}

class Parser {
 public:
  Parser(const std::string& source, const LibsvmOptions& options) : source_(source), options_(options) {
    data_.name = source;
  }

  void line(std::string_view text, std::size_t number) {
    line_ = number;
    if (const std::size_t hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
    std::size_t at = 0;
    const std::string_view label = next_token(text, at);
    if (label.empty()) return;  // blank or comment-only line
    make_room_for_row();
    data_.label.push_back(parse_label(label));
    std::uint64_t previous = 0;
    for (std::string_view pair = next_token(text, at); !pair.empty(); pair = next_token(text, at)) {
      const std::size_t colon = pair.find(':');
      if (colon == std::string_view::npos) fail("'" + shown_text(pair) + "' is not INDEX:VALUE (missing ':')");
      const std::uint64_t index = parse_index(pair.substr(0, colon));
      if (index <= previous) {
        fail("feature index " + std::to_string(index) + " after " + std::to_string(previous) +
             " (indices must strictly increase)");
      }
      // Parsed as double so that tiny values underflow to 0 instead of failing, then checked against float's range.
      double value = 0;
      if (!parse_number(pair.substr(colon + 1), value) || std::abs(value) > std::numeric_limits<float>::max()) {
        fail("value '" + shown_text(pair.substr(colon + 1)) + "' of feature " + std::to_string(index) +
             " is not a finite float");
      }
      make_room_for_nonzero();
      data_.index.push_back(static_cast<std::uint32_t>(index - 1));
      data_.value.push_back(static_cast<float>(value));
      largest_index_ = std::max(largest_index_, index);
      previous = index;
    }
    data_.row_begin.push_back(data_.index.size());
  }

  SparseDataset finish() {
    if (data_.rows() == 0) {
      line_ = 1;
      fail("no examples (empty file); expected lines of LABEL INDEX:VALUE ...");
    }
    data_.features = options_.features > 0 ? options_.features : static_cast<std::size_t>(largest_index_);
    return std::move(data_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ":" + std::to_string(line_) + ": " + what);
  }

  // The examples grow as they are read (a 5.8 MB gzip inflated to 3 GB ended in std::bad_alloc): each time a
  // vector must grow, the new allocation is checked against the memory available, so the file is refused at the
  // line where it outgrows the machine.
  void make_room_for_nonzero() {
    if (data_.index.size() < data_.index.capacity()) return;
    const std::size_t grown = std::max<std::size_t>(4096, 2 * data_.index.capacity());
    check_growth(static_cast<double>(grown) * (sizeof(std::uint32_t) + sizeof(float)));
    data_.index.reserve(grown);
    data_.value.reserve(grown);
  }

  void make_room_for_row() {
    if (data_.label.size() < data_.label.capacity()) return;
    const std::size_t grown = std::max<std::size_t>(1024, 2 * data_.label.capacity());
    check_growth(static_cast<double>(grown) * (sizeof(float) + sizeof(std::uint64_t)));
    data_.label.reserve(grown);
    data_.row_begin.reserve(grown + 1);
  }

  void check_growth(double bytes) const {
    check_available_memory(bytes, source_ + ":" + std::to_string(line_) + ": reading on needs another ",
                           " (beside " + std::to_string(data_.rows()) + " examples and " + std::to_string(data_.nnz()) +
                               " values so far; 8 bytes per value, 12 per example)");
  }

  [[noreturn]] void fail_mixed(std::string_view label, std::size_t other_line, const char* other_label) const {
    fail("label '" + shown_text(label) + "' mixes the -1/+1 and 0/1 conventions (line " + std::to_string(other_line) +
         " has " + other_label + ")");
  }

  float parse_label(std::string_view text) {
    double label = 0;
    if (options_.regression) {
      if (!parse_number(text, label) || std::abs(label) > std::numeric_limits<float>::max()) {
        fail("label '" + shown_text(text) + "' is not a finite float");
      }
      return static_cast<float>(label);
    }
    if (!parse_number(text, label) || (label != 1.0 && label != -1.0 && label != 0.0)) {
      fail("label '" + shown_text(text) + "' is not one of -1, +1, 0, 1 (binary classification only)");
    }
    // 0/1 files read 0 as -1; a file that uses both -1 and 0 has three classes, not two.
    if (label == -1.0) {
      if (zero_line_ > 0) fail_mixed(text, zero_line_, "0");
      if (minus_line_ == 0) minus_line_ = line_;
    } else if (label == 0.0) {
      if (minus_line_ > 0) fail_mixed(text, minus_line_, "-1");
      if (zero_line_ == 0) zero_line_ = line_;
    }
    return label > 0 ? 1.0f : -1.0f;
  }

  std::uint64_t parse_index(std::string_view text) const {
    std::uint64_t index = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), index);
    if (text.empty() || error != std::errc{} || end != text.data() + text.size()) {
      fail("feature index '" + shown_text(text) + "' is not a positive integer");
    }
    if (index == 0) fail("feature index 0: feature indices are 1-based");
    if (index > kMaxLibsvmFeatures) {
      fail("feature index " + std::to_string(index) + " is beyond the " + std::to_string(kMaxLibsvmFeatures) +
           " features dsgd's solvers index (liblinear counts features in an int)");
    }
    if (options_.features > 0 && index > options_.features) {
      fail("feature index " + std::to_string(index) + " is beyond the declared " + std::to_string(options_.features) +
           " features");
    }
    return index;
  }

  std::string source_;
  const LibsvmOptions& options_;
  SparseDataset data_;
  std::size_t line_ = 0;
  std::uint64_t largest_index_ = 0;
  std::size_t minus_line_ = 0;  // first line labelled -1, 0 if none
  std::size_t zero_line_ = 0;   // first line labelled 0, 0 if none
};

}  // namespace

SparseDataset parse_libsvm(std::string_view text, const std::string& source_name, const LibsvmOptions& options) {
  Parser parser(source_name, options);
  std::size_t number = 1;
  for (std::size_t at = 0; at < text.size(); ++number) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    parser.line(text.substr(at, end - at), number);
    at = end + 1;
  }
  return parser.finish();
}

SparseDataset read_libsvm(const std::filesystem::path& path, const LibsvmOptions& options) {
  // Parsed as it is read, a line at a time: the text is never held whole (a gzip file may inflate a thousandfold).
  const std::string source = path.string();
  Parser parser(source, options);
  std::string partial;  // the start of a line whose end is in a later piece
  std::size_t number = 1;
  read_file_in_chunks(path, [&](std::span<const std::uint8_t> piece) {
    std::string_view text(reinterpret_cast<const char*>(piece.data()), piece.size());
    for (std::size_t end = text.find('\n'); end != std::string_view::npos; end = text.find('\n')) {
      if (partial.empty()) {
        parser.line(text.substr(0, end), number++);
      } else {
        partial.append(text.substr(0, end));
        parser.line(partial, number++);
        partial.clear();
      }
      text.remove_prefix(end + 1);
    }
    if (partial.size() + text.size() > partial.capacity()) {
      const std::size_t grown = std::max(2 * partial.capacity(), partial.size() + text.size());
      check_available_memory(static_cast<double>(grown),
                             source + ":" + std::to_string(number) + ": this line alone needs ");
      partial.reserve(grown);
    }
    partial.append(text);
  });
  if (!partial.empty()) parser.line(partial, number);
  SparseDataset data = parser.finish();
  // The models trained on it are dense over every feature: one index of 1e9 would mean tens of gigabytes.
  check_available_memory(
      static_cast<double>(data.features) * kDenseBytesPerFeature,
      path.string() + ": " + std::to_string(data.features) + " features: its dense models need an estimated ",
      " (" + std::to_string(static_cast<int>(kDenseBytesPerFeature)) + " bytes per feature)");
  return data;
}

std::string to_libsvm(const SparseDataset& data, const LibsvmOptions& options) {
  std::string out;
  out.reserve(data.nnz() * 12 + data.rows() * 4);
  char number[32];
  // Shortest text that reads back to the same float (to_chars' round-trip guarantee).
  const auto append = [&](float value) {
    const auto result = std::to_chars(number, number + sizeof number, value);
    out.append(number, result.ptr);
  };
  for (std::size_t row = 0; row < data.rows(); ++row) {
    if (options.regression) {
      append(data.label[row]);
    } else {
      out += data.label[row] > 0 ? "+1" : "-1";
    }
    const auto indices = data.row_index(row);
    const auto values = data.row_value(row);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      out += ' ';
      out += std::to_string(std::uint64_t{indices[k]} + 1);
      out += ':';
      append(values[k]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace dsgd::data
