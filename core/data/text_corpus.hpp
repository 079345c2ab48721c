#pragma once
// A byte-level text corpus for training a language model (docs/datasets.md "Text"): the bytes of a file, or of every
// regular file of a directory in name order (Debian's fortunes: /usr/share/games/fortunes, leaving out the .dat
// indexes and the .u8 links), split into a training part and a held-out tail.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace dsgd::data {

struct TextCorpus {
  std::vector<std::uint8_t> bytes;
  std::size_t training_bytes = 0;  // the first ones; the rest is held out
  std::size_t files = 0;
};

// Reads `path` (gzip-transparent, as read_binary_file). Throws InputError naming the path for one that does not
// exist, holds no text, holds more than `max_bytes`, or is too short for two sequences of `sequence` tokens in each
// part, and for a held-out share outside [0, 0.5].
TextCorpus read_text_corpus(const std::filesystem::path& path, std::int64_t sequence, double held_out = 0.1,
                            std::size_t max_bytes = std::size_t{256} << 20);

// Debian's fortunes (package fortunes), the corpus dsgd trains its small GPT on.
inline constexpr const char* kDefaultTextCorpus = "/usr/share/games/fortunes";

// Fills ids with `ids.size()` consecutive bytes of part [begin, end) of the corpus starting at an offset drawn from
// `key`, and targets with the bytes one further: the next-byte task. Deterministic in `key`.
void sample_text(const TextCorpus& corpus, bool held_out, std::uint64_t key, std::span<std::int32_t> ids,
                 std::span<std::int32_t> targets);

}  // namespace dsgd::data
