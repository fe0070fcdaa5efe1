#pragma once
// Where a file not yet written will go, and the room there: for the checks that refuse
// a run (or a simulation) before it fills a disk.
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace spip {

// `path`, or its nearest parent that exists.
inline std::filesystem::path nearest_existing(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path existing = fs::absolute(path);
  while (!fs::exists(existing) && existing.has_parent_path() && existing != existing.parent_path())
    existing = existing.parent_path();
  return existing;
}

// Bytes free to this process on the file system `path` would be written to; none where
// it cannot say (the write itself will tell).
inline std::optional<double> free_bytes(const std::string& path) {
  std::error_code error;
  const std::filesystem::space_info space = std::filesystem::space(nearest_existing(path), error);
  if (error) return std::nullopt;
  return static_cast<double>(space.available);
}

}  // namespace spip
