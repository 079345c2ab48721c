#pragma once
// Whole-file binary reads (and writes, for fixtures and exports) of dataset files, gzip-transparent: Debian ships the
// IDX files gzip-compressed, the upstream downloads unpack them, and readers should not care which one they were given.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace dsgd::data {

// Reads all bytes of `path`. A file that starts with the gzip magic (1f 8b) is decompressed (several concatenated
// members are allowed, as gzip(1) does); any other file is returned as is. Offsets in later error messages refer to
// the returned (decompressed) bytes.
// Throws InputError "PATH: no such file" when it does not exist, InputError naming the compressed offset when the
// gzip data is truncated or corrupt, IoError when it exists but cannot be read.
std::vector<std::uint8_t> read_binary_file(const std::filesystem::path& path);

// True when `bytes` starts with the gzip magic number.
bool is_gzip(const std::vector<std::uint8_t>& bytes);

// The gzip encoding (one member, zlib's default level) of `bytes`, as gzip(1) would write it.
std::vector<std::uint8_t> gzip_bytes(std::span<const std::uint8_t> bytes);

// Writes `bytes` to `path` atomically (core/atomic_file.hpp), creating parent folders. Throws IoError.
void write_binary_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

}  // namespace dsgd::data
