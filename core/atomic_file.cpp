#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace dsgd {

namespace {

std::string kind_of(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory:
      return "a folder";
    case std::filesystem::file_type::symlink:
      return "a symbolic link";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::character:
      return "a character device";
    case std::filesystem::file_type::fifo:
      return "a FIFO";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// The nearest folder at or above `folder` that exists must be a folder this process can write into (create
// the rest below it).
void check_writable_ancestor(const std::filesystem::path& path, std::filesystem::path folder) {
  std::error_code ec;
  if (folder.empty()) folder = ".";
  while (!std::filesystem::exists(folder, ec)) {
    const std::filesystem::path parent = folder.parent_path();
    if (parent.empty()) {
      folder = ".";  // a relative path's first folder is missing: it goes into the current one
      break;
    }
    if (parent == folder) break;
    folder = parent;
  }
  if (!std::filesystem::is_directory(folder, ec)) {
    throw InputError(path.string() + ": cannot write here: " + folder.string() + " is not a folder");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw InputError(path.string() + ": cannot write here: " + folder.string() + ": " + std::strerror(errno));
  }
  // access() says yes to root everywhere, also where no file can be made (sysfs, procfs, a full or read-only
  // mount): a file made and removed again is the only early answer that holds.
  std::string probe = (folder / ".dsgd-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw InputError(path.string() + ": cannot write here: cannot create a file in " + folder.string() + ": " +
                     std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// Why `path` must not be replaced (something there that is not a regular file), or empty.
std::string not_replaceable(const std::filesystem::path& path) {
  std::error_code ec;
  const auto type = std::filesystem::symlink_status(path, ec).type();
  if (type == std::filesystem::file_type::not_found || type == std::filesystem::file_type::regular) return "";
  if (ec) return "cannot check the output path: " + ec.message();
  return "is " + kind_of(type) + "; dsgd writes only to a new path or over a regular file";
}

}  // namespace

void check_output_file(const std::filesystem::path& path) {
  if (path.empty()) throw InputError("an output file path is empty");
  if (const std::string reason = not_replaceable(path); !reason.empty()) {
    throw InputError(path.string() + ": " + reason);
  }
  check_writable_ancestor(path, path.parent_path());
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::filesystem::path>>& outputs) {
  std::vector<std::filesystem::path> resolved;
  for (const auto& [option, path] : outputs) {
    std::error_code ec;
    resolved.push_back(path.empty() ? path : std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (!resolved[i].empty() && resolved[i] == resolved[j]) {
        throw InputError(outputs[i].first + " and " + outputs[j].first + " name the same file (" +
                         outputs[j].second.string() + ")");
      }
    }
  }
}

PrivateTempFolder::PrivateTempFolder(std::string_view prefix) {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  std::string pattern = base + "/" + std::string(prefix) + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw InputError("TMPDIR (" + base + "): cannot make a temporary folder there: " + std::strerror(errno) +
                     " (set TMPDIR to a writable folder)");
  }
  path_ = pattern;
}

PrivateTempFolder::~PrivateTempFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void mark_as_owned(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw IoError(folder.string() + ": cannot create folder: " + ec.message());
  write_file_atomically(folder / kOwnedFolderMarker,
                        "This folder was written by dsgd, which may replace it (keeping the last one as "
                        "FOLDER.previous). dsgd never replaces a folder without this file.\n");
}

bool is_owned(const std::filesystem::path& folder) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::symlink_status(folder / kOwnedFolderMarker, ec));
}

void check_output_folder(const std::filesystem::path& path) {
  if (path.empty()) throw InputError("an output folder path is empty");
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() != std::filesystem::file_type::not_found &&
      status.type() != std::filesystem::file_type::directory) {
    throw InputError(path.string() + ": is " + kind_of(status.type()) + ", not a folder to write into");
  }
  // The folder is replaced as a whole, by renames beside it: `.` or a folder above the current one would leave
  // the shell in a removed or renamed folder (`--out .` failed only after the work).
  const auto here = std::filesystem::current_path(ec);
  const auto target = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  if (!ec && !here.empty()) {
    const auto [mismatch, _] = std::mismatch(target.begin(), target.end(), here.begin(), here.end());
    if (mismatch == target.end()) {
      throw InputError(path.string() +
                       ": is the current folder or holds it, and dsgd replaces the folder it writes "
                       "as a whole: name a folder below it (e.g. " +
                       (path / "report").string() + ")");
    }
  }
  if (status.type() == std::filesystem::file_type::directory && !is_owned(path) &&
      !std::filesystem::is_empty(path, ec)) {
    throw InputError(path.string() + ": holds files dsgd did not write (it has no " + std::string(kOwnedFolderMarker) +
                     "), and dsgd replaces only its own folders: name a new or empty folder");
  }
  check_writable_ancestor(path, path);
}

std::filesystem::path previous_of(const std::filesystem::path& target) { return target.string() + ".previous"; }

void replace_folder_keeping_previous(const std::filesystem::path& staging, const std::filesystem::path& target) {
  const std::filesystem::path previous = previous_of(target);
  std::error_code ec;
  const auto exists = [&](const std::filesystem::path& path) {
    return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
  };
  // An empty folder holds nothing to keep: it goes (remove() takes only an empty one), as if it were not there.
  const auto kept = [&](const std::filesystem::path& path) {
    if (!exists(path)) return false;
    if (!is_owned(path) && std::filesystem::is_empty(path, ec) && std::filesystem::remove(path, ec)) return false;
    return true;
  };
  const bool had_target = kept(target);
  // What would be lost: only dsgd's own folders (check_output_folder refused the others before any work; this
  // catches what appeared since).
  if (had_target && !is_owned(target)) {
    throw IoError(target.string() + ": holds files dsgd did not write; not replaced (the new one is in " +
                  staging.string() + ")");
  }
  const std::filesystem::path aside = previous.string() + ".old-" + std::to_string(::getpid());
  const bool had_previous = had_target && kept(previous);
  if (had_previous) {
    if (!is_owned(previous)) {
      throw IoError(previous.string() + ": holds files dsgd did not write; not replaced (the new report is in " +
                    staging.string() + ")");
    }
    std::filesystem::rename(previous, aside, ec);
    if (ec) throw IoError(previous.string() + ": cannot move it aside: " + ec.message());
  }
  if (had_target) {
    std::filesystem::rename(target, previous, ec);
    if (ec) {
      std::error_code ignored;
      if (had_previous) std::filesystem::rename(aside, previous, ignored);
      throw IoError(target.string() + ": cannot keep it as " + previous.string() + ": " + ec.message());
    }
  }
  std::filesystem::rename(staging, target, ec);
  if (ec) {
    std::error_code ignored;
    if (had_target) std::filesystem::rename(previous, target, ignored);
    if (had_previous) std::filesystem::rename(aside, previous, ignored);
    throw IoError(target.string() + ": cannot move the new one into place: " + ec.message());
  }
  if (had_previous) std::filesystem::remove_all(aside, ec);  // dsgd's own, checked above
}

int remove_stale_folders(const std::filesystem::path& target, std::string_view infix) {
  const std::filesystem::path parent = target.has_parent_path() ? target.parent_path() : ".";
  const std::string prefix = target.filename().string() + std::string(infix);
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.size() > 9 ||
        !std::all_of(pid_text.begin(), pid_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    const bool alive = ::kill(pid, 0) == 0 || errno == EPERM;
    if (alive || !is_owned(entry.path())) continue;
    std::filesystem::remove_all(entry.path(), ec);
    if (!ec) ++removed;
  }
  return removed;
}

void move_into_place(const std::filesystem::path& staging, const std::filesystem::path& target) {
  const std::filesystem::path old = target.string() + ".old-" + std::to_string(::getpid());
  std::error_code ec;
  const bool had_old = std::filesystem::exists(std::filesystem::symlink_status(target, ec));
  if (had_old) {
    std::filesystem::rename(target, old, ec);
    if (ec) throw IoError(target.string() + ": cannot move the previous one aside: " + ec.message());
  }
  std::filesystem::rename(staging, target, ec);
  if (ec) {
    std::error_code ignored;
    if (had_old) std::filesystem::rename(old, target, ignored);
    throw IoError(target.string() + ": cannot move the new one into place: " + ec.message());
  }
  if (had_old) std::filesystem::remove_all(old, ec);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  // Commands check their output paths when parsing (InputError); this catches what appeared since, or a path the
  // program chose.
  if (const std::string reason = not_replaceable(path); !reason.empty()) throw IoError(path.string() + ": " + reason);
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) throw IoError(path.parent_path().string() + ": cannot create folder: " + ec.message());
  }
  std::string temp = path.string() + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) throw IoError(path.string() + ": cannot create temporary file: " + std::strerror(errno));

  auto fail = [&](const char* step) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    ::unlink(temp.c_str());
    throw IoError(path.string() + ": " + step + " failed: " + reason);
  };
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) fail("chmod");
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    throw IoError(path.string() + ": close failed: " + reason);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    throw IoError(path.string() + ": rename failed: " + reason);
  }
}

}  // namespace dsgd
