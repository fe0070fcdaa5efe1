#pragma once
// Writes into files that several ranks fill at once (the product cubes), through MPI-IO:
// each rank writes only its own bytes, so no rank needs a file lock.
#include <memory>

#include "spip/common/file_extent.hpp"

namespace spip::parallel {

// Writes FileWrites into existing files, independently of the other ranks. Each file
// is opened by this rank alone at its first write and stays open until close(): a
// stage writes each of its cubes once per channel or row group, and every open costs
// a metadata round trip on a parallel file system. sync() before recording that bytes
// are written (a progress marker): MPI-IO guarantees them only after a sync or a close,
// and a file system may report a full disk only then. close() before a barrier after
// which another rank reads, re-headers or renames the files, so that it sees the bytes.
// write(), sync() and close() throw spip::Error naming the file and MPI's reason. Any
// thread of a rank may write; sync() and close() once no other thread writes. The
// destructor closes what is still open (after an exception) and reports nothing.
class FileWriter {
 public:
  FileWriter();
  ~FileWriter();  // closes what is open, without throwing
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(const FileWrite& write);
  void sync();  // the files written since the last sync()
  void close();
  int files_opened() const;  // since construction: each file once, however often written

 private:
  struct Files;
  std::unique_ptr<Files> files_;
};

}  // namespace spip::parallel
