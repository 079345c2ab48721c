#include "core/data/binary_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <system_error>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"

namespace dsgd::data {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
// zlib counts in uInt (32 bits): feed and drain at most this much per call.
constexpr std::size_t kZlibMax = std::numeric_limits<uInt>::max();

// Decompresses a gzip stream given in pieces (concatenated members, trailing zero padding as gzip(1) allows),
// handing the output on in pieces of at most kChunkBytes: memory stays at one piece plus zlib's window.
class Inflater {
 public:
  explicit Inflater(const std::filesystem::path& path) : path_(path), out_(kChunkBytes) {
    // 16 + MAX_WBITS: expect a gzip header and trailer (checked by zlib, including the CRC).
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) throw IoError(path.string() + ": cannot initialise zlib");
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  void feed(std::span<const std::uint8_t> in, const ChunkConsumer& consume) {
    while (!in.empty()) {
      if (member_ended_) {
        // After a member: zero padding to the end, or the next member's header.
        if (padding_ || in.front() == 0) {
          padding_ = true;
          const auto data = std::find_if(in.begin(), in.end(), [](std::uint8_t b) { return b != 0; });
          if (data != in.end()) corrupt(in_total_ + static_cast<std::size_t>(data - in.begin()), "data after padding");
          in_total_ += in.size();
          return;
        }
        if (inflateReset(&stream_) != Z_OK) throw IoError(path_.string() + ": zlib reset failed");
        member_ended_ = false;
      }
      in = in.subspan(inflate_some(in.first(std::min(in.size(), kZlibMax)), consume));
    }
    // Output that did not fit the piece is still inside zlib: drain it.
    while (!member_ended_ && output_full_) inflate_some({}, consume);
  }

  // The input ended: a member still open is a truncated file.
  void finish() const {
    if (member_ended_) return;
    throw InputError(path_.string() + ": offset " + std::to_string(in_total_) +
                     " of the compressed file: gzip data ends early (truncated file?) after " +
                     std::to_string(out_total_) + " decompressed bytes");
  }

 private:
  // One call of inflate on `in`, its output handed on; returns how much of `in` it used.
  std::size_t inflate_some(std::span<const std::uint8_t> in, const ChunkConsumer& consume) {
    stream_.next_in = const_cast<Bytef*>(in.data());
    stream_.avail_in = static_cast<uInt>(in.size());
    stream_.next_out = out_.data();
    stream_.avail_out = static_cast<uInt>(out_.size());
    const int rc = inflate(&stream_, Z_NO_FLUSH);
    const std::size_t used = in.size() - stream_.avail_in;
    in_total_ += used;
    const std::size_t produced = out_.size() - stream_.avail_out;
    out_total_ += produced;
    output_full_ = stream_.avail_out == 0;
    if (produced > 0) consume(std::span<const std::uint8_t>(out_.data(), produced));
    if (rc == Z_STREAM_END) member_ended_ = true;
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
      corrupt(in_total_, stream_.msg != nullptr ? stream_.msg : "data error");
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    return used;  // Z_OK or Z_BUF_ERROR (input used up, or output full): the caller goes on
  }

  [[noreturn]] void corrupt(std::size_t offset, const std::string& why) const {
    throw InputError(path_.string() + ": offset " + std::to_string(offset) +
                     " of the compressed file: corrupt gzip data (" + why + ")");
  }

  const std::filesystem::path& path_;
  z_stream stream_{};
  std::vector<std::uint8_t> out_;
  std::size_t in_total_ = 0;
  std::size_t out_total_ = 0;
  bool member_ended_ = false;
  bool padding_ = false;
  bool output_full_ = false;  // the last inflate filled its piece: more output may wait inside zlib
};

// Collects a whole decompressed file, no further than the format's declared size once known (ExpectedSize), else
// than the memory available.
class Collector {
 public:
  Collector(const std::filesystem::path& path, const ExpectedSize& expected_size)
      : path_(path), expected_size_(expected_size), limit_(static_cast<std::size_t>(available_memory_bytes())) {}

  void append(std::span<const std::uint8_t> piece) {
    if (!limit_known_ && expected_size_) {
      bytes_.insert(bytes_.end(), piece.begin(), piece.end());
      if (const auto size = expected_size_(bytes_)) {
        limit_ = std::min(limit_, *size);
        limit_known_ = true;
      }
    } else {
      // One byte past the limit is enough to tell that the data goes on.
      const std::size_t room = limit_ + 1 - std::min(limit_ + 1, bytes_.size());
      bytes_.insert(bytes_.end(), piece.begin(),
                    piece.begin() + static_cast<std::ptrdiff_t>(std::min(room, piece.size())));
    }
    if (bytes_.size() <= limit_) return;
    if (limit_known_) {
      throw InputError(path_.string() + ": offset " + std::to_string(limit_) + ": the data goes on after the " +
                       std::to_string(limit_) + " bytes its header declares (expected end of file)");
    }
    throw InputError(path_.string() + ": decompresses to more than " + bytes_text(static_cast<double>(limit_)) +
                     ", the memory this machine has available");
  }

  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  const std::filesystem::path& path_;
  const ExpectedSize& expected_size_;
  std::size_t limit_;
  bool limit_known_ = false;
  std::vector<std::uint8_t> bytes_;
};

bool starts_with_gzip_magic(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

using FileHandle = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

// Opens `path` for reading with the error wording of read_text_file (core/json.hpp): a named file that is not there
// is the user's input error; returns its size.
FileHandle open_input(const std::filesystem::path& path, std::uintmax_t& size) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) throw InputError(path.string() + ": no such file");
  if (ec) throw IoError(path.string() + ": cannot access: " + ec.message());
  if (!std::filesystem::is_regular_file(status)) throw InputError(path.string() + ": not a regular file");
  size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(path.string() + ": cannot read the size: " + ec.message());
  FileHandle file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw IoError(path.string() + ": cannot open for reading");
  return file;
}

// The next piece of `file` into `buffer` (empty at the end).
std::span<const std::uint8_t> read_piece(std::FILE* file, std::vector<std::uint8_t>& buffer,
                                         const std::filesystem::path& path) {
  const std::size_t got = std::fread(buffer.data(), 1, buffer.size(), file);
  if (std::ferror(file)) throw IoError(path.string() + ": read failed");
  return {buffer.data(), got};
}

}  // namespace

bool is_gzip(const std::vector<std::uint8_t>& bytes) { return starts_with_gzip_magic(bytes); }

void read_file_in_chunks(const std::filesystem::path& path, const ChunkConsumer& consume) {
  std::uintmax_t size = 0;
  const FileHandle file = open_input(path, size);
  std::vector<std::uint8_t> buffer(kChunkBytes);
  std::span<const std::uint8_t> piece = read_piece(file.get(), buffer, path);
  if (!starts_with_gzip_magic(piece)) {
    for (; !piece.empty(); piece = read_piece(file.get(), buffer, path)) consume(piece);
    return;
  }
  Inflater inflater(path);
  for (; !piece.empty(); piece = read_piece(file.get(), buffer, path)) inflater.feed(piece, consume);
  inflater.finish();
}

std::vector<std::uint8_t> read_binary_file(const std::filesystem::path& path, const ExpectedSize& expected_size) {
  std::uintmax_t size = 0;
  const FileHandle file = open_input(path, size);
  std::vector<std::uint8_t> head(std::min<std::uintmax_t>(size, 2));
  if (!starts_with_gzip_magic(read_piece(file.get(), head, path))) {
    // One fread of the known size: no copies for a 26 MB file.
    check_available_memory(static_cast<double>(size), path.string() + ": reading it needs ");
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
    std::rewind(file.get());
    bytes.resize(read_piece(file.get(), bytes, path).size());  // it may have shrunk: the format checks say so
    return bytes;
  }
  std::rewind(file.get());
  Collector collector(path, expected_size);
  const ChunkConsumer collect = [&](std::span<const std::uint8_t> piece) { collector.append(piece); };
  Inflater inflater(path);
  std::vector<std::uint8_t> buffer(kChunkBytes);
  for (auto piece = read_piece(file.get(), buffer, path); !piece.empty();
       piece = read_piece(file.get(), buffer, path)) {
    inflater.feed(piece, collect);
  }
  inflater.finish();
  return collector.take();
}

std::vector<std::uint8_t> decompress_if_gzip(std::vector<std::uint8_t> bytes, const std::filesystem::path& path,
                                             const ExpectedSize& expected_size) {
  if (!is_gzip(bytes)) return bytes;
  Collector collector(path, expected_size);
  Inflater inflater(path);
  inflater.feed(bytes, [&](std::span<const std::uint8_t> piece) { collector.append(piece); });
  inflater.finish();
  return collector.take();
}

std::vector<std::uint8_t> gzip_bytes(std::span<const std::uint8_t> bytes) {
  z_stream stream{};
  // 16 + MAX_WBITS: write a gzip header and trailer rather than a bare zlib stream.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw IoError("cannot initialise zlib for compression");
  }
  const std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&stream, &deflateEnd);
  std::vector<std::uint8_t> out(deflateBound(&stream, static_cast<uLong>(bytes.size())) + 64);
  constexpr std::size_t kChunk = std::numeric_limits<uInt>::max();
  std::size_t in_pos = 0;
  std::size_t out_pos = 0;
  for (;;) {
    if (out_pos == out.size()) out.resize(out.size() * 2);
    stream.next_in = const_cast<Bytef*>(bytes.data() + in_pos);
    stream.avail_in = static_cast<uInt>(std::min(bytes.size() - in_pos, kChunk));
    stream.next_out = out.data() + out_pos;
    stream.avail_out = static_cast<uInt>(std::min(out.size() - out_pos, kChunk));
    const uInt avail_in = stream.avail_in;
    const uInt avail_out = stream.avail_out;
    const bool last = in_pos + avail_in == bytes.size();
    const int rc = deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH);
    in_pos += avail_in - stream.avail_in;
    out_pos += avail_out - stream.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw IoError("zlib compression failed");
  }
  out.resize(out_pos);
  return out;
}

void write_binary_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace dsgd::data
