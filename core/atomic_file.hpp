#pragma once
// Writing files so that a reader never sees half of one: write a temporary file beside the target, flush it to
// disk, then rename it over the target (rename is atomic within one file system).

#include <filesystem>
#include <string_view>

namespace dsgd {

// Writes `content` to `path` atomically, creating parent folders. Throws IoError naming the path on failure and
// leaves no temporary file behind.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace dsgd
