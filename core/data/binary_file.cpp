#include "core/data/binary_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <system_error>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"

namespace dsgd::data {
namespace {

std::vector<std::uint8_t> read_raw(const std::filesystem::path& path) {
  // Same wording as read_text_file (core/json.hpp): a named file that is not there is the user's input error.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) throw InputError(path.string() + ": no such file");
  if (ec) throw IoError(path.string() + ": cannot access: " + ec.message());
  if (!std::filesystem::is_regular_file(status)) throw InputError(path.string() + ": not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(path.string() + ": cannot read the size: " + ec.message());

  // stdio with one fread of the known size: no stream-buffer copies for a 26 MB file.
  const auto close = [](std::FILE* f) { std::fclose(f); };
  const std::unique_ptr<std::FILE, decltype(close)> file(std::fopen(path.c_str(), "rb"), close);
  if (!file) throw IoError(path.string() + ": cannot open for reading");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  const std::size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), file.get());
  if (std::ferror(file.get())) throw IoError(path.string() + ": read failed");
  bytes.resize(got);  // the file may have shrunk since file_size; the format checks then report a short file
  return bytes;
}

// Decompresses every gzip member of `compressed`. The gzip trailer's ISIZE (size mod 2^32 of the last member) is a
// good first guess for the output size, so a single member is inflated without reallocating.
std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& compressed, const std::filesystem::path& path,
                                 const ExpectedSize& expected_size) {
  // Output beyond `limit` is refused: the format's declared size once known, else the memory available.
  const std::size_t memory = static_cast<std::size_t>(available_memory_bytes());
  std::size_t limit = memory;
  bool limit_known = false;
  // A truncated file's last four bytes are not a trailer, so the guess is capped: it only sizes the first buffer.
  std::size_t guess = std::size_t{1} << 16;
  if (compressed.size() >= 18) {
    const std::size_t n = compressed.size();
    const std::uint32_t isize = std::uint32_t{compressed[n - 4]} | std::uint32_t{compressed[n - 3]} << 8 |
                                std::uint32_t{compressed[n - 2]} << 16 | std::uint32_t{compressed[n - 1]} << 24;
    guess = std::clamp<std::size_t>(isize, 1, compressed.size() * 32 + guess);
  }
  guess = std::min(guess, limit + 1);
  std::vector<std::uint8_t> out(guess);

  z_stream stream{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (checked by zlib, including the CRC).
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw IoError(path.string() + ": cannot initialise zlib");
  const std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&stream, &inflateEnd);

  std::size_t in_pos = 0;
  std::size_t out_pos = 0;
  // zlib counts in uInt (32 bits): feed and drain at most this much per call.
  constexpr std::size_t kChunk = std::numeric_limits<uInt>::max();
  const auto check_limit = [&] {
    if (!limit_known && expected_size) {
      if (const auto size = expected_size(std::span<const std::uint8_t>(out.data(), out_pos))) {
        limit = std::min(limit, *size);
        limit_known = true;
      }
    }
    if (out_pos <= limit) return;
    if (limit_known) {
      throw InputError(path.string() + ": offset " + std::to_string(limit) + ": the data goes on after the " +
                       std::to_string(limit) + " bytes its header declares (expected end of file)");
    }
    throw InputError(path.string() + ": decompresses to more than " + bytes_text(static_cast<double>(limit)) +
                     ", the memory this machine has available");
  };
  for (;;) {
    check_limit();
    // One byte past the limit is enough to tell that the data goes on.
    if (out_pos == out.size()) out.resize(std::min(out.size() * 2, limit + 1));
    stream.next_in = const_cast<Bytef*>(compressed.data() + in_pos);
    stream.avail_in = static_cast<uInt>(std::min(compressed.size() - in_pos, kChunk));
    stream.next_out = out.data() + out_pos;
    stream.avail_out = static_cast<uInt>(std::min(out.size() - out_pos, kChunk));
    const uInt avail_in = stream.avail_in;
    const uInt avail_out = stream.avail_out;
    const int rc = inflate(&stream, Z_NO_FLUSH);
    in_pos += avail_in - stream.avail_in;
    out_pos += avail_out - stream.avail_out;
    if (rc == Z_STREAM_END) {
      // Another member may follow (concatenated .gz files); trailing zero padding is tolerated like gzip(1) does.
      const bool only_padding = std::all_of(compressed.begin() + static_cast<std::ptrdiff_t>(in_pos), compressed.end(),
                                            [](std::uint8_t b) { return b == 0; });
      if (only_padding) break;
      if (inflateReset(&stream) != Z_OK) throw IoError(path.string() + ": zlib reset failed");
      continue;
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
      throw InputError(path.string() + ": offset " + std::to_string(in_pos) +
                       " of the compressed file: corrupt gzip data (" +
                       (stream.msg != nullptr ? stream.msg : "data error") + ")");
    }
    if (rc == Z_MEM_ERROR) throw IoError(path.string() + ": out of memory while decompressing");
    // Z_BUF_ERROR with input used up: the stream ended before its trailer.
    if (in_pos == compressed.size() && (rc == Z_BUF_ERROR || stream.avail_out > 0)) {
      throw InputError(path.string() + ": offset " + std::to_string(in_pos) +
                       " of the compressed file: gzip data ends early (truncated file?) after " +
                       std::to_string(out_pos) + " decompressed bytes");
    }
  }
  check_limit();
  out.resize(out_pos);
  return out;
}

}  // namespace

bool is_gzip(const std::vector<std::uint8_t>& bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::vector<std::uint8_t> read_binary_file(const std::filesystem::path& path, const ExpectedSize& expected_size) {
  return decompress_if_gzip(read_raw(path), path, expected_size);
}

std::vector<std::uint8_t> decompress_if_gzip(std::vector<std::uint8_t> bytes, const std::filesystem::path& path,
                                             const ExpectedSize& expected_size) {
  if (!is_gzip(bytes)) return bytes;
  return gunzip(bytes, path, expected_size);
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
