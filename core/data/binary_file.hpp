#pragma once
// Whole-file binary reads (and writes, for fixtures and exports) of dataset files, gzip-transparent: Debian ships the
// IDX files gzip-compressed, the upstream downloads unpack them, and readers should not care which one they were given.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace dsgd::data {

// Reads all bytes of `path`. A file that starts with the gzip magic (1f 8b) is decompressed (several concatenated
// members are allowed, as gzip(1) does); any other file is returned as is. Offsets in later error messages refer to
// the returned (decompressed) bytes.
// Throws InputError "PATH: no such file" when it does not exist, InputError naming the compressed offset when the
// gzip data is truncated or corrupt, IoError when it exists but cannot be read.
// `expected_size`, when given, is the format's size rule: from the first bytes of the (decompressed) file, the size
// the whole file must have, or nullopt while the prefix is too short to tell. A gzip file is then decompressed no
// further than that: data beyond it is an InputError at once, so a small file that inflates to gigabytes behind an
// honest header (a "gzip bomb") never takes that memory. Without it, decompression stops with an InputError at the
// memory this machine has available.
using ExpectedSize = std::function<std::optional<std::size_t>(std::span<const std::uint8_t> prefix)>;
std::vector<std::uint8_t> read_binary_file(const std::filesystem::path& path, const ExpectedSize& expected_size = {});

// Calls `consume` with the bytes of `path` in order, in pieces of at most 1 MiB: decompressed when the file starts
// with the gzip magic, as is otherwise. Holds one piece at a time (plus zlib's window), so a reader that parses as
// it goes needs memory for what it keeps, not for the file. Throws what read_binary_file throws, and what
// `consume` throws.
using ChunkConsumer = std::function<void(std::span<const std::uint8_t>)>;
void read_file_in_chunks(const std::filesystem::path& path, const ChunkConsumer& consume);

// What read_binary_file does with a file's bytes: gzip data decompressed, anything else as is. `path` names it in
// errors.
std::vector<std::uint8_t> decompress_if_gzip(std::vector<std::uint8_t> bytes, const std::filesystem::path& path,
                                             const ExpectedSize& expected_size = {});

// True when `bytes` starts with the gzip magic number.
bool is_gzip(const std::vector<std::uint8_t>& bytes);

// The gzip encoding (one member, zlib's default level) of `bytes`, as gzip(1) would write it.
std::vector<std::uint8_t> gzip_bytes(std::span<const std::uint8_t> bytes);

// Writes `bytes` to `path` atomically (core/atomic_file.hpp), creating parent folders. Throws IoError.
void write_binary_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

}  // namespace dsgd::data
