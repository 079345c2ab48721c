#pragma once
// Writing files so that a reader never sees half of one: write a temporary file beside the target, flush it to
// disk, then rename it over the target (rename is atomic within one file system).

#include <filesystem>
#include <string_view>

namespace dsgd {

// Writes `content` to `path` atomically, creating parent folders. Refuses (IoError) to replace anything at `path`
// but a regular file. Throws IoError naming the path on failure and leaves no temporary
// file behind.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// Checks, before any work, that a file can be written at `path`: nothing is there or a regular file is (a symlink,
// FIFO, device or folder is refused: dsgd never replaces them), and the nearest existing folder above it is a
// writable folder. Throws InputError "PATH: ..." naming the reason.
void check_output_file(const std::filesystem::path& path);

// Replaces `target` (a file or folder, or nothing) by `staging` (renamed, so on the same file system): the old one
// is moved aside first and removed only once the new one is in, so a failure leaves the old one in place. Throws
// IoError naming the target.
void move_into_place(const std::filesystem::path& staging, const std::filesystem::path& target);

// The same for a folder dsgd fills (a report): nothing there, or a folder (a symlink to one is followed).
void check_output_folder(const std::filesystem::path& path);

}  // namespace dsgd
