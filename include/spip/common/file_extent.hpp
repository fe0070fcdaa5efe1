#pragma once
// Bytes for given places of one file: what the fits room lays out (a cube's pixels at
// their offsets, in FITS byte order) and the parallel room writes with MPI-IO, so that
// neither room needs the other's library.
#include <cstddef>
#include <string>
#include <vector>

namespace spip {

struct FileExtent {
  long long offset = 0;
  std::vector<std::byte> bytes;
};

struct FileWrite {
  std::string path;
  std::vector<FileExtent> extents;  // disjoint
};

}  // namespace spip
