#pragma once
// Writes into files that several ranks fill at once (the product cubes), through MPI-IO:
// each rank writes only its own bytes, so no rank needs a file lock.
#include "spip/common/file_extent.hpp"

namespace spip::parallel {

// Writes every extent of `write` into its existing file, independently of the other
// ranks (the file is opened by this rank alone and closed again, so that a rank that
// reads or renames it after a barrier sees the bytes). Throws spip::Error naming the
// file and MPI's reason (a full disk among them). Callable from any thread of a rank.
void write_extents(const FileWrite& write);

}  // namespace spip::parallel
