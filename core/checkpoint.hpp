#pragma once
// Checkpoint files of `dsgd run` and `dsgd train` (docs/checkpoint.md): the run's identity (every setting that must
// match for a bit-identical resume, as name = value pairs), the iteration it reached, and named sections of bytes
// (each rank's state, the history so far), behind a magic, a format version and a CRC-32 of the payload. Written
// atomically (core/atomic_file.hpp), so a process killed while writing leaves the previous checkpoint whole.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/data/dataset.hpp"
#include "core/model_zoo.hpp"

namespace dsgd {

// --checkpoint FILE --checkpoint-every N --resume, as `dsgd run` and `dsgd train` take them.
struct CheckpointOptions {
  std::string path;        // empty: no checkpoints
  std::int64_t every = 0;  // iterations between checkpoints, a multiple of the evaluation interval; 0: every one
  bool resume = false;     // start from `path` where it exists (a fresh start, with a note, where it does not)
};

// Name = value pairs in a fixed order: what a checkpoint was made by.
using Identity = std::vector<std::pair<std::string, std::string>>;

struct Checkpoint {
  Identity identity;
  std::int64_t iteration = 0;  // per worker
  std::map<std::string, std::string> sections;
};

inline constexpr std::uint32_t kCheckpointFormatVersion = 1;

// Serialises `checkpoint` and writes it to `path` atomically. IoError when it cannot.
void write_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);
// Reads the checkpoint at `path`. InputError "checkpoint <path>: <what is wrong>" for a file that is not a whole
// checkpoint of this format: too short, no magic, another format version, a length that disagrees with the header
// (truncated or with bytes appended), a CRC-32 mismatch, a malformed payload. IoError when it cannot be read.
Checkpoint read_checkpoint(const std::filesystem::path& path);
// InputError "checkpoint <path> does not match this run: <field> is <stored> there, <expected> here" for the first
// field of `expected` whose value differs from `stored`'s or that `stored` lacks. Fields of `stored` that `expected`
// does not name are not compared (the process that launches an MPI run checks the options; rank 0 the data too).
void check_identity(const std::filesystem::path& path, const Identity& stored, const Identity& expected);
// The checks `dsgd run` and `dsgd train` share, their messages starting "<command>: ": InputError for --resume or
// --checkpoint-every without --checkpoint, or an interval that is not a multiple of `eval_every` (checkpoints follow
// evaluations). Returns whether checkpoints are on.
bool check_checkpoint_interval(std::string_view command, const CheckpointOptions& options, std::int64_t eval_every);
// InputError where checkpoint `path` at `iteration` has spent the budget of `iterations` (0: none) already: a resumed
// run trains at least one more round.
void check_not_spent(const std::string& path, std::int64_t iteration, std::int64_t iterations);
// InputError when `model` has a layer whose state carries over from batch to batch and that a checkpoint does not
// hold (dropout's mask counter, batch normalisation's running statistics), naming the layer.
void check_checkpointable(const ModelSpec& model);
// A data set in an identity: "<N> images <C>x<H>x<W>, <K> classes, crc32 <hex>" (zlib's CRC-32 of its images and
// labels), so two folders of one name but other contents differ.
std::string data_identity(const data::Dataset& data);

// Plain values appended to / read from a section, in the host's byte order (little-endian: docs/checkpoint.md).
class ByteWriter {
 public:
  void u64(std::uint64_t value) { raw(&value, sizeof value); }
  void i64(std::int64_t value) { raw(&value, sizeof value); }
  void f64(double value) { raw(&value, sizeof value); }
  void text(std::string_view value);             // its length, then its bytes
  void floats(std::span<const float> values);    // its count, then its floats
  void doubles(std::span<const double> values);  // its count, then its doubles
  void raw(const void* data, std::size_t bytes);
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

// Reads what a ByteWriter wrote. `what` names the section in errors: InputError "checkpoint <what>: ends early" or
// "... holds N floats where M were expected".
class ByteReader {
 public:
  ByteReader(std::string_view bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}
  std::uint64_t u64();
  std::int64_t i64();
  double f64();
  std::string text();
  // Exactly out.size() values, or InputError.
  void floats(std::span<float> out);
  void doubles(std::span<double> out);
  std::vector<double> doubles();
  void raw(void* data, std::size_t bytes);
  bool done() const { return position_ == bytes_.size(); }
  const std::string& what() const { return what_; }

 private:
  std::string_view bytes_;
  std::string what_;
  std::size_t position_ = 0;
};

}  // namespace dsgd
