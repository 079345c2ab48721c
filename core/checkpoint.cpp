#include "core/checkpoint.hpp"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <system_error>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"

namespace dsgd {

namespace {

static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian (docs/checkpoint.md)");

// The file: magic, format version (u32), payload bytes (u64), payload, CRC-32 of the payload (u32).
constexpr std::string_view kMagic = "DSGDCKPT";
constexpr std::size_t kHeaderBytes = kMagic.size() + sizeof(std::uint32_t) + sizeof(std::uint64_t);
constexpr std::size_t kTrailerBytes = sizeof(std::uint32_t);

std::uint32_t crc32_of(const void* data, std::size_t bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  // zlib takes uInt lengths: feed large buffers in pieces.
  while (bytes > 0) {
    const auto piece = static_cast<uInt>(std::min<std::size_t>(bytes, 1U << 30));
    crc = ::crc32(crc, p, piece);
    p += piece;
    bytes -= piece;
  }
  return static_cast<std::uint32_t>(crc);
}

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "%08" PRIx32, value);
  return text;
}

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what) {
  throw InputError("checkpoint " + path.string() + ": " + what);
}

}  // namespace

void ByteWriter::raw(const void* data, std::size_t bytes) { bytes_.append(static_cast<const char*>(data), bytes); }

void ByteWriter::text(std::string_view value) {
  u64(value.size());
  raw(value.data(), value.size());
}

void ByteWriter::floats(std::span<const float> values) {
  u64(values.size());
  raw(values.data(), values.size_bytes());
}

void ByteWriter::doubles(std::span<const double> values) {
  u64(values.size());
  raw(values.data(), values.size_bytes());
}

void ByteReader::raw(void* data, std::size_t bytes) {
  if (bytes > bytes_.size() - position_) {
    throw InputError("checkpoint " + what_ + ": ends early (" + std::to_string(bytes) + " bytes wanted at offset " +
                     std::to_string(position_) + " of " + std::to_string(bytes_.size()) + ")");
  }
  if (bytes > 0) std::memcpy(data, bytes_.data() + position_, bytes);
  position_ += bytes;
}

std::uint64_t ByteReader::u64() {
  std::uint64_t value = 0;
  raw(&value, sizeof value);
  return value;
}

std::int64_t ByteReader::i64() {
  std::int64_t value = 0;
  raw(&value, sizeof value);
  return value;
}

double ByteReader::f64() {
  double value = 0;
  raw(&value, sizeof value);
  return value;
}

std::string ByteReader::text() {
  const std::uint64_t size = u64();
  if (size > bytes_.size() - position_) {
    throw InputError("checkpoint " + what_ + ": a text of " + std::to_string(size) + " bytes runs past its end");
  }
  std::string value(bytes_.substr(position_, size));
  position_ += size;
  return value;
}

void ByteReader::floats(std::span<float> out) {
  const std::uint64_t count = u64();
  if (count != out.size()) {
    throw InputError("checkpoint " + what_ + ": holds " + std::to_string(count) + " floats where " +
                     std::to_string(out.size()) + " were expected");
  }
  raw(out.data(), out.size_bytes());
  // Weights and optimiser state: a NaN would train on silently (ReLU and pooling can keep the loss finite).
  const auto bad = std::find_if(out.begin(), out.end(), [](float f) { return !std::isfinite(f); });
  if (bad != out.end()) {
    const auto non_finite = std::count_if(bad, out.end(), [](float f) { return !std::isfinite(f); });
    throw InputError("checkpoint " + what_ + ": " + std::to_string(non_finite) + " of " + std::to_string(out.size()) +
                     " floats are not finite (the first at " + std::to_string(bad - out.begin()) +
                     "): the run that wrote it diverged");
  }
}

void ByteReader::doubles(std::span<double> out) {
  const std::uint64_t count = u64();
  if (count != out.size()) {
    throw InputError("checkpoint " + what_ + ": holds " + std::to_string(count) + " doubles where " +
                     std::to_string(out.size()) + " were expected");
  }
  raw(out.data(), out.size_bytes());
}

std::vector<double> ByteReader::doubles() {
  const std::uint64_t count = u64();
  if (count > (bytes_.size() - position_) / sizeof(double)) {
    throw InputError("checkpoint " + what_ + ": " + std::to_string(count) + " doubles run past its end");
  }
  std::vector<double> values(count);
  raw(values.data(), count * sizeof(double));
  return values;
}

void write_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint) {
  ByteWriter payload;
  payload.u64(checkpoint.identity.size());
  for (const auto& [name, value] : checkpoint.identity) {
    payload.text(name);
    payload.text(value);
  }
  payload.i64(checkpoint.iteration);
  payload.u64(checkpoint.sections.size());
  for (const auto& [name, bytes] : checkpoint.sections) {
    payload.text(name);
    payload.text(bytes);
  }
  const std::string body = payload.take();
  ByteWriter file;
  file.raw(kMagic.data(), kMagic.size());
  const std::uint32_t version = kCheckpointFormatVersion;
  file.raw(&version, sizeof version);
  file.u64(body.size());
  file.raw(body.data(), body.size());
  const std::uint32_t crc = crc32_of(body.data(), body.size());
  file.raw(&crc, sizeof crc);
  write_file_atomically(path, file.take());
}

Checkpoint read_checkpoint(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);  // also refuses what is not a regular file
  if (ec) throw IoError("checkpoint " + path.string() + ": cannot be read: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("checkpoint " + path.string() + ": cannot be opened for reading");
  // The header first, checked against the file's length before the payload is read: a 1 GB file that is no
  // checkpoint used to be read whole before its first error.
  std::string header_bytes(std::min<std::uintmax_t>(size, kHeaderBytes), '\0');
  in.read(header_bytes.data(), static_cast<std::streamsize>(header_bytes.size()));
  if (in.bad()) throw IoError("checkpoint " + path.string() + ": read failed");
  header_bytes.resize(static_cast<std::size_t>(in.gcount()));
  // A file shorter than the magic is truncated if it is the magic's start (an empty file too).
  const bool magic = header_bytes.size() >= kMagic.size() ? header_bytes.compare(0, kMagic.size(), kMagic) == 0
                                                          : kMagic.starts_with(header_bytes);
  if (!magic) refuse(path, "not a dsgd checkpoint (no DSGDCKPT magic)");
  if (size < kHeaderBytes + kTrailerBytes) {
    refuse(path, "truncated: " + std::to_string(size) + " bytes, shorter than any checkpoint");
  }
  ByteReader header(std::string_view(header_bytes).substr(kMagic.size()), path.string());
  std::uint32_t version = 0;
  header.raw(&version, sizeof version);
  if (version != kCheckpointFormatVersion) {
    refuse(path, "format version " + std::to_string(version) + "; this dsgd reads version " +
                     std::to_string(kCheckpointFormatVersion));
  }
  const std::uint64_t body_bytes = header.u64();
  const std::uint64_t promised = kHeaderBytes + body_bytes + kTrailerBytes;
  if (body_bytes > size || size != promised) {
    refuse(path, (size < promised ? "truncated: " : "has bytes after its end: ") + std::to_string(size) +
                     " bytes where the header promises " + std::to_string(promised));
  }
  // The payload and the sections copied out of it.
  check_available_memory(2.0 * static_cast<double>(body_bytes), "checkpoint " + path.string() + ": reading it needs ",
                         " (twice its payload)");
  std::string file = header_bytes;
  file.resize(static_cast<std::size_t>(promised));
  in.read(file.data() + kHeaderBytes, static_cast<std::streamsize>(promised - kHeaderBytes));
  if (in.bad()) throw IoError("checkpoint " + path.string() + ": read failed");
  if (static_cast<std::uint64_t>(in.gcount()) != promised - kHeaderBytes) {
    refuse(path, "truncated while it was read (another process is writing it?)");
  }
  const std::string_view body = std::string_view(file).substr(kHeaderBytes, body_bytes);
  std::uint32_t stored = 0;
  std::memcpy(&stored, file.data() + kHeaderBytes + body_bytes, sizeof stored);
  const std::uint32_t computed = crc32_of(body.data(), body.size());
  if (stored != computed) {
    refuse(path, "checksum mismatch (CRC-32 stored " + hex32(stored) + ", computed " + hex32(computed) +
                     "): the file is corrupt");
  }
  ByteReader payload(body, path.string());
  Checkpoint checkpoint;
  const std::uint64_t fields = payload.u64();
  for (std::uint64_t i = 0; i < fields; ++i) {
    std::string name = payload.text();
    checkpoint.identity.emplace_back(std::move(name), payload.text());
  }
  checkpoint.iteration = payload.i64();
  const std::uint64_t sections = payload.u64();
  for (std::uint64_t i = 0; i < sections; ++i) {
    std::string name = payload.text();
    checkpoint.sections[name] = payload.text();
  }
  if (!payload.done()) refuse(path, "malformed payload: bytes after its last section");
  return checkpoint;
}

void check_identity(const std::filesystem::path& path, const Identity& stored, const Identity& expected) {
  for (const auto& [name, value] : expected) {
    const std::string& key = name;  // clang 14 cannot capture a structured binding
    const auto found =
        std::find_if(stored.begin(), stored.end(), [&](const auto& field) { return field.first == key; });
    if (found == stored.end()) {
      throw InputError("checkpoint " + path.string() + " does not match this run: it has no " + name +
                       " (this run: " + value + ")");
    }
    if (found->second != value) {
      throw InputError("checkpoint " + path.string() + " does not match this run: " + name + " is " + found->second +
                       " there, " + value + " here");
    }
  }
}

bool check_checkpoint_interval(std::string_view command, const CheckpointOptions& options, std::int64_t eval_every) {
  const std::string prefix(command);
  if (options.path.empty()) {
    if (options.resume || options.every != 0) {
      throw InputError(prefix + ": --resume and --checkpoint-every need --checkpoint FILE");
    }
    return false;
  }
  if (options.every < 0 || (eval_every > 0 && options.every % eval_every != 0)) {
    throw InputError(prefix + ": --checkpoint-every (" + std::to_string(options.every) +
                     ") must be a multiple of --eval-every (" + std::to_string(eval_every) +
                     "): checkpoints are written after evaluations (0: after every one)");
  }
  return true;
}

void check_not_spent(const std::string& path, std::int64_t iteration, std::int64_t iterations) {
  if (iterations > 0 && iteration >= iterations) {
    throw InputError("checkpoint " + path + " is at iteration " + std::to_string(iteration) + ": --iterations " +
                     std::to_string(iterations) + " is spent (raise it to train further)");
  }
}

void check_checkpointable(const ModelSpec& model) {
  for (const auto& layer : model.layers) {
    if (layer.kind == LayerKind::kDropout || layer.kind == LayerKind::kBatchNorm) {
      throw InputError("--checkpoint: model " + model.name + "'s layer '" + layer.name + "' (" +
                       std::string(layer.kind == LayerKind::kDropout ? "dropout" : "batch_norm") +
                       ") keeps state from batch to batch that a checkpoint does not hold");
    }
  }
}

std::string data_identity(const data::Dataset& data) {
  uLong crc = crc32_of(data.images.data(), data.images.size() * sizeof(float));
  crc = ::crc32_combine(crc, crc32_of(data.labels.data(), data.labels.size() * sizeof(std::int32_t)),
                        static_cast<z_off_t>(data.labels.size() * sizeof(std::int32_t)));
  return std::to_string(data.size()) + " images " + std::to_string(data.channels) + "x" + std::to_string(data.height) +
         "x" + std::to_string(data.width) + ", " + std::to_string(data.classes) + " classes, crc32 " +
         hex32(static_cast<std::uint32_t>(crc));
}

}  // namespace dsgd
