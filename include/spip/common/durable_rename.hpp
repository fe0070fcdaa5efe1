#pragma once
// A rename that a power cut cannot turn into a final name over unwritten pages (XFS, or
// ext4 without its rename heuristics): the file's bytes reach the disk before its name
// changes, and the directory's new entry after.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace spip {

// fsync of what `path` names, opened with `flags`; where it cannot be opened the rename
// still decides what the reader sees.
inline void sync_to_disk(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// std::filesystem::rename(from, to) between syncs; its error, if any.
inline std::error_code durable_rename(const std::string& from, const std::string& to) {
  sync_to_disk(from, O_RDONLY);
  std::error_code error;
  std::filesystem::rename(from, to, error);
  if (!error) {
    const std::filesystem::path parent = std::filesystem::absolute(to).parent_path();
    sync_to_disk(parent.string(), O_RDONLY | O_DIRECTORY);
  }
  return error;
}

}  // namespace spip
