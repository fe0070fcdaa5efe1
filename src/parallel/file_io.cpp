#include "spip/parallel/file_io.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <string>

#include "spip/error.hpp"

namespace spip::parallel {
namespace {

void check(int rc, const std::string& what, const std::string& path) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  SPIP_THROW(spip::Error, "cannot " + what + " '" + path + "' (MPI-IO): " + std::string(text, static_cast<std::size_t>(length)));
}

}  // namespace

void write_extents(const FileWrite& write) {
  if (write.extents.empty()) return;
  MPI_File file;
  // MPI_COMM_SELF: independent I/O, with no collective that ranks holding different
  // numbers of planes would reach at different times. Contiguous writes only, so that
  // ROMIO's data sieving (a read-modify-write under a lock) never applies.
  check(MPI_File_open(MPI_COMM_SELF, write.path.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &file), "open", write.path);
  try {
    for (const FileExtent& extent : write.extents) {
      // MPI counts are int: a plane beyond 2 GiB goes in pieces.
      constexpr std::size_t piece = std::size_t{1} << 30;
      for (std::size_t done = 0; done < extent.bytes.size(); done += piece) {
        const int count = static_cast<int>(std::min(piece, extent.bytes.size() - done));
        MPI_Status status;
        check(MPI_File_write_at(file, static_cast<MPI_Offset>(extent.offset + static_cast<long long>(done)),
                                extent.bytes.data() + done, count, MPI_BYTE, &status),
              "write", write.path);
        int written = 0;
        MPI_Get_count(&status, MPI_BYTE, &written);
        if (written != count)
          SPIP_THROW(spip::Error, "cannot write '" + write.path + "' (MPI-IO): " + std::to_string(written) + " of " +
                                      std::to_string(count) + " bytes written");
      }
    }
  } catch (...) {
    MPI_File_close(&file);
    throw;
  }
  check(MPI_File_close(&file), "write", write.path);
}

}  // namespace spip::parallel
