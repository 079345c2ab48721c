#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "core/data/binary_file.hpp"
#include "core/data/libsvm.hpp"
#include "core/error.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::data {
namespace {

using dsgd::testing::error_of;

std::string parse_error(const std::string& text, const LibsvmOptions& options = {}) {
  return error_of<InputError>([&] { parse_libsvm(text, "t.svm", options); });
}

TEST(CoreDataLibsvm, ParsesRowsWithOneBasedIndices) {
  const SparseDataset data = parse_libsvm("+1 1:0.5 3:2\n-1 2:1e-3\n1\n", "t.svm");
  EXPECT_EQ(data.name, "t.svm");
  EXPECT_EQ(data.features, 3U);  // the largest index
  EXPECT_EQ(data.row_begin, (std::vector<std::uint64_t>{0, 2, 3, 3}));
  EXPECT_EQ(data.index, (std::vector<std::uint32_t>{0, 2, 1}));
  EXPECT_EQ(data.value, (std::vector<float>{0.5f, 2.0f, 1e-3f}));
  EXPECT_EQ(data.label, (std::vector<float>{1, -1, 1}));
  EXPECT_NO_THROW(check_sparse(data));
}

TEST(CoreDataLibsvm, AcceptsZeroOneLabelsTabsCommentsAndCrLf) {
  const SparseDataset data = parse_libsvm("0\t2:1 # a comment\r\n\n# only a comment\n1.0 1:+4 4:-2\r\n", "t.svm");
  EXPECT_EQ(data.label, (std::vector<float>{-1, 1}));
  EXPECT_EQ(data.index, (std::vector<std::uint32_t>{1, 0, 3}));
  EXPECT_EQ(data.value, (std::vector<float>{1, 4, -2}));
  EXPECT_EQ(data.features, 4U);
}

TEST(CoreDataLibsvm, DeclaredFeatureCountWidensAndBounds) {
  EXPECT_EQ(parse_libsvm("+1 2:1\n", "t.svm", {.features = 10}).features, 10U);
  EXPECT_EQ(parse_error("+1 2:1\n-1 11:1\n", {.features = 10}),
            "t.svm:2: feature index 11 is beyond the declared 10 features");
}

TEST(CoreDataLibsvm, RegressionLabelsAreAnyFiniteFloat) {
  const auto data = parse_libsvm("2.5 1:1\n-0.125 2:3\n0 1:1\n", "t.svm", {.regression = true});
  EXPECT_EQ(data.label, (std::vector<float>{2.5F, -0.125F, 0.0F}));
  EXPECT_EQ(to_libsvm(data, {.regression = true}), "2.5 1:1\n-0.125 2:3\n0 1:1\n");
  EXPECT_EQ(parse_error("nan 1:1\n", {.regression = true}), "t.svm:1: label 'nan' is not a finite float");
  EXPECT_EQ(parse_error("1e39 1:1\n", {.regression = true}), "t.svm:1: label '1e39' is not a finite float");
}

TEST(CoreDataLibsvm, MalformedLinesNameFileAndLine) {
  EXPECT_EQ(parse_error("+1 1:1\n-1 0:1\n"), "t.svm:2: feature index 0: feature indices are 1-based");
  EXPECT_EQ(parse_error("+1 x:1\n"), "t.svm:1: feature index 'x' is not a positive integer");
  EXPECT_EQ(parse_error("+1 -3:1\n"), "t.svm:1: feature index '-3' is not a positive integer");
  EXPECT_EQ(parse_error("+1 1.5:1\n"), "t.svm:1: feature index '1.5' is not a positive integer");
  EXPECT_EQ(parse_error("+1 :1\n"), "t.svm:1: feature index '' is not a positive integer");
  EXPECT_EQ(parse_error("+1 2:abc\n"), "t.svm:1: value 'abc' of feature 2 is not a finite float");
  EXPECT_EQ(parse_error("+1 2:nan\n"), "t.svm:1: value 'nan' of feature 2 is not a finite float");
  EXPECT_EQ(parse_error("+1 2:1e39\n"), "t.svm:1: value '1e39' of feature 2 is not a finite float");
  EXPECT_EQ(parse_error("+1 2:\n"), "t.svm:1: value '' of feature 2 is not a finite float");
  EXPECT_EQ(parse_error("\n+1 1:1 7:1 4:1\n"), "t.svm:2: feature index 4 after 7 (indices must strictly increase)");
  EXPECT_EQ(parse_error("+1 3:1 3:2\n"), "t.svm:1: feature index 3 after 3 (indices must strictly increase)");
  EXPECT_EQ(parse_error("+1 3\n"), "t.svm:1: '3' is not INDEX:VALUE (missing ':')");
  EXPECT_EQ(parse_error("2 1:1\n"), "t.svm:1: label '2' is not one of -1, +1, 0, 1 (binary classification only)");
  EXPECT_EQ(parse_error("yes 1:1\n"), "t.svm:1: label 'yes' is not one of -1, +1, 0, 1 (binary classification only)");
  EXPECT_EQ(parse_error("-1 1:1\n+1 1:1\n0 1:1\n"),
            "t.svm:3: label '0' mixes the -1/+1 and 0/1 conventions (line 1 has -1)");
  EXPECT_EQ(parse_error("0 1:1\n-1 1:1\n"), "t.svm:2: label '-1' mixes the -1/+1 and 0/1 conventions (line 1 has 0)");
  EXPECT_EQ(parse_error(""), "t.svm:1: no examples (empty file); expected lines of LABEL INDEX:VALUE ...");
  EXPECT_EQ(parse_error("\n# nothing\n"), "t.svm:1: no examples (empty file); expected lines of LABEL INDEX:VALUE ...");
}

TEST(CoreDataLibsvm, WriterRoundTrips) {
  const SparseDataset data = parse_libsvm("+1 1:0.1 3:2.5e-07\n-1 2:-3\n-1\n", "t.svm");
  const std::string text = to_libsvm(data);
  EXPECT_EQ(text, "+1 1:0.1 3:2.5e-07\n-1 2:-3\n-1\n");
  const SparseDataset back = parse_libsvm(text, "back.svm", {.features = data.features});
  EXPECT_EQ(back.row_begin, data.row_begin);
  EXPECT_EQ(back.index, data.index);
  EXPECT_EQ(back.value, data.value);
  EXPECT_EQ(back.label, data.label);
}

class CoreDataLibsvmFile : public dsgd::testing::ScratchDirTest {};

TEST_F(CoreDataLibsvmFile, ReadsPlainAndGzipFiles) {
  const std::string text = "+1 1:1 2:2\n-1 5:1\n";
  const std::vector<std::uint8_t> bytes(text.begin(), text.end());
  write_binary_file(dir_ / "a.svm", bytes);
  write_binary_file(dir_ / "a.svm.gz", gzip_bytes(bytes));
  for (const char* name : {"a.svm", "a.svm.gz"}) {
    const SparseDataset data = read_libsvm(dir_ / name);
    EXPECT_EQ(data.name, (dir_ / name).string());
    EXPECT_EQ(data.features, 5U);
    EXPECT_EQ(data.nnz(), 3U);
  }
  const std::string bad = "+1 1:1\n-1 0:1\n";
  write_binary_file(dir_ / "bad.svm.gz", gzip_bytes(std::vector<std::uint8_t>(bad.begin(), bad.end())));
  EXPECT_EQ(error_of<InputError>([&] { read_libsvm(dir_ / "bad.svm.gz"); }),
            (dir_ / "bad.svm.gz").string() + ":2: feature index 0: feature indices are 1-based");
  EXPECT_NE(error_of<InputError>([&] { read_libsvm(dir_ / "missing.svm"); }).find("missing.svm"), std::string::npos);
}

// Read as it inflates, in 1 MiB pieces: lines that straddle pieces, a piece of compressed input that inflates to
// many pieces, concatenated gzip members and trailing zero padding all give what the whole text parses to.
TEST_F(CoreDataLibsvmFile, ReadsInPiecesAsTheWholeTextParses) {
  std::string text;
  for (int row = 0; text.size() < (std::size_t{5} << 20); ++row) {
    text += row % 2 == 0 ? "+1" : "-1";
    for (int feature = 1 + row % 7; feature <= 400; feature += 1 + row % 5) {
      text += " " + std::to_string(feature) + ":" + std::to_string((row + feature) % 13) + ".25";
    }
    text += '\n';
  }
  const SparseDataset whole = parse_libsvm(text, "whole");
  const std::vector<std::uint8_t> bytes(text.begin(), text.end());
  const std::size_t half = text.find('\n', text.size() / 2) + 1;
  std::vector<std::uint8_t> members = gzip_bytes(std::span(bytes).first(half));
  const std::vector<std::uint8_t> second = gzip_bytes(std::span(bytes).subspan(half));
  members.insert(members.end(), second.begin(), second.end());
  std::vector<std::uint8_t> padded = gzip_bytes(bytes);
  padded.resize(padded.size() + 4096, 0);
  write_binary_file(dir_ / "plain.svm", bytes);
  write_binary_file(dir_ / "members.svm.gz", members);
  write_binary_file(dir_ / "padded.svm.gz", padded);
  for (const char* name : {"plain.svm", "members.svm.gz", "padded.svm.gz"}) {
    SCOPED_TRACE(name);
    const SparseDataset data = read_libsvm(dir_ / name);
    EXPECT_EQ(data.row_begin, whole.row_begin);
    EXPECT_EQ(data.index, whole.index);
    EXPECT_EQ(data.value, whole.value);
    EXPECT_EQ(data.label, whole.label);
  }
  padded.push_back(7);  // not padding: a byte of data after it
  write_binary_file(dir_ / "junk.svm.gz", padded);
  EXPECT_NE(error_of<InputError>([&] { read_libsvm(dir_ / "junk.svm.gz"); }).find("corrupt gzip data"),
            std::string::npos);
}

}  // namespace
}  // namespace dsgd::data
