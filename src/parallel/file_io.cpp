#include "spip/parallel/file_io.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "spip/error.hpp"

namespace spip::parallel {
namespace {

void check(int rc, const std::string& what, const std::string& path) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  const std::string message = "cannot " + what + " '" + path + "' (MPI-IO): " + std::string(text, static_cast<std::size_t>(length));
  int error_class = 0;
  MPI_Error_class(rc, &error_class);
  // A full disk or quota is the output's, as the disk check at the start would have said.
  if (error_class == MPI_ERR_NO_SPACE || error_class == MPI_ERR_QUOTA) SPIP_THROW(spip::InputError, message);
  SPIP_THROW(spip::Error, message);
}

void write_extent(MPI_File file, const FileExtent& extent, const std::string& path) {
  // MPI counts are int: a plane beyond 2 GiB goes in pieces.
  constexpr std::size_t piece = std::size_t{1} << 30;
  for (std::size_t done = 0; done < extent.bytes.size(); done += piece) {
    const int count = static_cast<int>(std::min(piece, extent.bytes.size() - done));
    MPI_Status status;
    check(MPI_File_write_at(file, static_cast<MPI_Offset>(extent.offset + static_cast<long long>(done)),
                            extent.bytes.data() + done, count, MPI_BYTE, &status),
          "write", path);
    int written = 0;
    MPI_Get_count(&status, MPI_BYTE, &written);
    if (written != count)  // a short write: the disk or the quota is full
      SPIP_THROW(spip::InputError, "cannot write '" + path + "' (MPI-IO): " + std::to_string(written) + " of " +
                                       std::to_string(count) + " bytes written; is the disk or the quota full?");
  }
}

}  // namespace

struct FileWriter::Files {
  std::mutex mutex;  // guards `open`; MPI_THREAD_MULTIPLE lets threads write one file at once
  std::map<std::string, MPI_File> open;
  std::set<std::string> unsynced;  // written since the last sync()
  int opened = 0;
};

FileWriter::FileWriter() : files_(std::make_unique<Files>()) {}

FileWriter::~FileWriter() {
  for (auto& [path, file] : files_->open) MPI_File_close(&file);
}

void FileWriter::write(const FileWrite& write) {
  if (write.extents.empty()) return;
  MPI_File file;
  {
    const std::lock_guard lock(files_->mutex);
    auto it = files_->open.find(write.path);
    if (it == files_->open.end()) {
      // MPI_COMM_SELF: independent I/O, with no collective that ranks holding different
      // numbers of planes would reach at different times. Contiguous writes only, so that
      // ROMIO's data sieving (a read-modify-write under a lock) never applies.
      check(MPI_File_open(MPI_COMM_SELF, write.path.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &file), "open",
            write.path);
      it = files_->open.emplace(write.path, file).first;
      ++files_->opened;
    }
    file = it->second;
    files_->unsynced.insert(write.path);
  }
  for (const FileExtent& extent : write.extents) write_extent(file, extent, write.path);
}

void FileWriter::sync() {
  const std::lock_guard lock(files_->mutex);
  for (const std::string& path : files_->unsynced) check(MPI_File_sync(files_->open.at(path)), "write", path);
  files_->unsynced.clear();
}

void FileWriter::close() {
  const std::lock_guard lock(files_->mutex);
  files_->unsynced.clear();
  std::string failed;
  int reason = MPI_SUCCESS;
  for (auto& [path, file] : files_->open) {
    const int rc = MPI_File_close(&file);
    if (rc != MPI_SUCCESS && failed.empty()) {
      failed = path;
      reason = rc;
    }
  }
  files_->open.clear();
  check(reason, "write", failed);
}

int FileWriter::files_opened() const {
  const std::lock_guard lock(files_->mutex);
  return files_->opened;
}

}  // namespace spip::parallel
