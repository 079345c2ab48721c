#pragma once
// Writing files so that a reader never sees half of one: write a temporary file beside the target, flush it to
// disk, then rename it over the target (rename is atomic within one file system).

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// InputError "OPTION1 and OPTION2 name the same file (PATH)" when two of `outputs` (option, path; empty paths
// skipped) are one file, however spelled (relative, with .., through a symlinked folder): one would overwrite the
// other (--results over --checkpoint made a run unresumable).
void check_distinct_outputs(const std::vector<std::pair<std::string, std::filesystem::path>>& outputs);

// A folder of this process's own under $TMPDIR (or /tmp), made by mkdtemp (mode 0700: no other user can plant or
// read a file in it), removed with everything in it when this goes out of scope. For files whose path must be
// handed to another process (an MPI rank's results): a predictable name in a shared folder could be a FIFO or a
// symlink another user planted. Throws InputError naming $TMPDIR when it is not a folder a temporary folder can be
// made in.
class PrivateTempFolder {
 public:
  explicit PrivateTempFolder(std::string_view prefix);
  ~PrivateTempFolder();
  PrivateTempFolder(const PrivateTempFolder&) = delete;
  PrivateTempFolder& operator=(const PrivateTempFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The file dsgd writes into every folder it fills as a whole (a report, and its staging folder while it is made):
// a folder holding it is dsgd's and may be replaced; any other folder with files in it is the user's, and dsgd never
// replaces or removes it (docs/errors.md "Output folders").
inline constexpr std::string_view kOwnedFolderMarker = ".dsgd-folder";
// Writes kOwnedFolderMarker into `folder`, creating the folder. Throws IoError naming it.
void mark_as_owned(const std::filesystem::path& folder);
// Whether `folder` holds kOwnedFolderMarker.
bool is_owned(const std::filesystem::path& folder);

// The same for a folder dsgd fills (a report): nothing there, an empty folder, or a folder dsgd wrote (it holds
// kOwnedFolderMarker); a symlink to a folder is followed. A folder of the user's is refused, not replaced.
void check_output_folder(const std::filesystem::path& path);

// Puts the folder `staging` at `target`, keeping what was there (a folder dsgd wrote) at `target`.previous, which
// replaces an older one only if dsgd wrote that too. A failure puts everything back. Throws IoError naming the
// folder.
void replace_folder_keeping_previous(const std::filesystem::path& staging, const std::filesystem::path& target);
// `target`.previous.
std::filesystem::path previous_of(const std::filesystem::path& target);

// Removes the folders beside `target` named `target`<infix><pid> (a staging folder) whose process is gone and that
// dsgd marked as its own: what a run killed before it could clean up left behind. Returns how many it removed.
int remove_stale_folders(const std::filesystem::path& target, std::string_view infix);

}  // namespace dsgd
