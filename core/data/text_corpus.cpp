#include "core/data/text_corpus.hpp"

#include <algorithm>
#include <string>
#include <system_error>

#include "core/data/binary_file.hpp"
#include "core/error.hpp"
#include "core/splitmix.hpp"

namespace dsgd::data {

namespace {

// The corpus files of a directory: regular files (not links) in name order, without fortune's .dat indexes.
std::vector<std::filesystem::path> corpus_files(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (entry.is_symlink() || !entry.is_regular_file() || entry.path().extension() == ".dat") continue;
    files.push_back(entry.path());
  }
  if (error) throw IoError(directory.string() + ": cannot list the directory: " + error.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TextCorpus read_text_corpus(const std::filesystem::path& path, std::int64_t sequence, double held_out,
                            std::size_t max_bytes) {
  if (!(held_out >= 0 && held_out <= 0.5)) {
    throw InputError("text corpus: the held-out share must be in [0, 0.5], got " + std::to_string(held_out));
  }
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw InputError(path.string() +
                     ": no such file or directory (the text corpus; Debian's package fortunes "
                     "installs " +
                     std::string(kDefaultTextCorpus) + ")");
  }
  TextCorpus corpus;
  const std::vector<std::filesystem::path> files =
      std::filesystem::is_directory(path) ? corpus_files(path) : std::vector<std::filesystem::path>{path};
  for (const auto& file : files) {
    const auto bytes = read_binary_file(file);
    if (corpus.bytes.size() + bytes.size() > max_bytes) {
      throw InputError(path.string() + ": the text corpus holds more than " + std::to_string(max_bytes) +
                       " bytes, the most it reads");
    }
    corpus.bytes.insert(corpus.bytes.end(), bytes.begin(), bytes.end());
    ++corpus.files;
  }
  corpus.training_bytes =
      corpus.bytes.size() - static_cast<std::size_t>(static_cast<double>(corpus.bytes.size()) * held_out);
  const auto needed = static_cast<std::size_t>(2 * (sequence + 1));
  if (corpus.training_bytes < needed || (held_out > 0 && corpus.bytes.size() - corpus.training_bytes < needed)) {
    throw InputError(path.string() + ": the text corpus holds " + std::to_string(corpus.bytes.size()) +
                     " bytes, too few for sequences of " + std::to_string(sequence) + " bytes in each part");
  }
  return corpus;
}

void sample_text(const TextCorpus& corpus, bool held_out, std::uint64_t key, std::span<std::int32_t> ids,
                 std::span<std::int32_t> targets) {
  const std::size_t begin = held_out ? corpus.training_bytes : 0;
  const std::size_t end = held_out ? corpus.bytes.size() : corpus.training_bytes;
  const std::size_t span = end - begin - ids.size();  // start offsets that leave room for the targets' last byte
  const std::size_t start = begin + static_cast<std::size_t>(splitmix64(key) % span);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ids[i] = corpus.bytes[start + i];
    targets[i] = corpus.bytes[start + i + 1];
  }
}

}  // namespace dsgd::data
