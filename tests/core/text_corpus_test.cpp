// core/data/text_corpus: a file or a folder of text files (links and fortune's .dat indexes left out) read in name
// order, its held-out tail, refusals, and next-byte samples that repeat for a key.
#include "core/data/text_corpus.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"

namespace dsgd::data {
namespace {

namespace fs = std::filesystem;

class TextCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dsgd-text-corpus-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

TEST_F(TextCorpusTest, ReadsAFolderInNameOrderWithoutIndexesOrLinks) {
  write("b", std::string(100, 'b'));
  write("a", std::string(100, 'a'));
  write("a.dat", std::string(50, 'x'));
  fs::create_symlink(dir_ / "a", dir_ / "a.u8");
  const TextCorpus corpus = read_text_corpus(dir_, 8, 0.1);
  EXPECT_EQ(corpus.files, 2U);
  ASSERT_EQ(corpus.bytes.size(), 200U);
  EXPECT_EQ(corpus.bytes.front(), 'a');
  EXPECT_EQ(corpus.bytes.back(), 'b');
  EXPECT_EQ(corpus.training_bytes, 180U);
}

TEST_F(TextCorpusTest, TrainingAndHeldOutSamplesStayInTheirParts) {
  write("parts", std::string(800, 'x') + std::string(200, 'Y'));
  const TextCorpus corpus = read_text_corpus(dir_ / "parts", 16, 0.2);
  std::vector<std::int32_t> ids(16), targets(16);
  for (std::uint64_t key = 0; key < 500; ++key) {
    sample_text(corpus, false, key, ids, targets);
    EXPECT_EQ(std::count(targets.begin(), targets.end(), 'x'), 16) << key;
    sample_text(corpus, true, key, ids, targets);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 'Y'), 16) << key;
  }
}

TEST_F(TextCorpusTest, RefusesWhatCannotTrain) {
  EXPECT_THROW(read_text_corpus(dir_ / "missing.txt", 8), InputError);
  write("short", "tiny");
  EXPECT_THROW(read_text_corpus(dir_ / "short", 8), InputError);
  write("long", std::string(1000, 'z'));
  EXPECT_THROW(read_text_corpus(dir_ / "long", 8, 0.9), InputError);
  EXPECT_THROW(read_text_corpus(dir_ / "long", 8, 0.1, 500), InputError);
}

TEST_F(TextCorpusTest, SamplesTheNextByteTaskRepeatablyInTheirPart) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('a' + i % 26);
  write("alphabet", text);
  const TextCorpus corpus = read_text_corpus(dir_ / "alphabet", 16, 0.2);
  std::vector<std::int32_t> ids(16), targets(16), again(16), unused(16);
  sample_text(corpus, false, 42, ids, targets);
  sample_text(corpus, false, 42, again, unused);
  EXPECT_EQ(ids, again);
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(targets[i], 'a' + (ids[i] - 'a' + 1) % 26);
}

}  // namespace
}  // namespace dsgd::data
