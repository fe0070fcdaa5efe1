#pragma once
// Writes into files that several ranks fill at once (the product cubes), through MPI-IO:
// each rank writes only its own bytes, so no rank needs a file lock.
#include <memory>

#include "spip/common/file_extent.hpp"

namespace spip::parallel {

// Writes FileWrites into existing files, independently of the other ranks. Each file
// is opened by this rank alone at its first write and stays open until close(): a
// stage writes each of its cubes once per channel or row group, and every open costs
// a metadata round trip on a parallel file system. close() before a barrier after
// which another rank reads, re-headers or renames the files, so that it sees the bytes.
// write() and close() throw spip::Error naming the file and MPI's reason (a full disk
// among them). Any thread of a rank may write.
class FileWriter {
 public:
  FileWriter();
  ~FileWriter();  // closes what is open, without throwing
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(const FileWrite& write);
  void close();
  int files_opened() const;  // since construction: each file once, however often written

 private:
  struct Files;
  std::unique_ptr<Files> files_;
};

}  // namespace spip::parallel
