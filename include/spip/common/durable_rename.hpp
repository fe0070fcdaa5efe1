#pragma once
// A rename that a power cut cannot turn into a final name over unwritten pages (XFS, or
// ext4 without its rename heuristics): the file's bytes reach the disk before its name
// changes, and the directory's new entry after.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

namespace spip {

// fsync of what `path` names, opened with `flags`: its error, none where the file system
// cannot sync (EINVAL, EROFS) or the path cannot be opened (the rename then decides).
inline std::error_code sync_to_disk(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return {};
  const int failed = ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);
  if (failed == 0 || failed == EINVAL || failed == EROFS) return {};
  return {failed, std::generic_category()};
}

// std::filesystem::rename(from, to) between syncs; its error, or the file's sync's (an
// I/O error writing it back), in which case nothing is renamed.
inline std::error_code durable_rename(const std::string& from, const std::string& to) {
  if (const std::error_code failed = sync_to_disk(from, O_RDONLY)) return failed;
  std::error_code error;
  std::filesystem::rename(from, to, error);
  if (!error) sync_to_disk(std::filesystem::absolute(to).parent_path().string(), O_RDONLY | O_DIRECTORY);
  return error;
}

}  // namespace spip
