#pragma once
// What the fits room's sources share about CFITSIO files: errors that name the file,
// an owning handle, and the partial-file discipline (write under NAME.partial, rename
// when complete). Private to src/fits.
#include <fitsio.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "spip/common/durable_rename.hpp"
#include "spip/error.hpp"

namespace spip::fits::detail {

// ---------------------------------------------------------------- errors

inline std::string cfitsio_text(int status) {
  char text[FLEN_STATUS] = {};
  fits_get_errstatus(status, text);
  // The message stack is global to the process; drop what this failure left.
  fits_clear_errmsg();
  return text;
}

[[noreturn]] inline void fail(const std::string& what, const std::string& path, int status) {
  std::string message = "FITS: cannot " + what + " '" + path + "': " + cfitsio_text(status) +
                        " (CFITSIO status " + std::to_string(status) + ")";
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    message += "; directory '" + parent.string() + "' does not exist";
  SPIP_THROW(spip::Error, message);
}

inline void check(int status, const std::string& what, const std::string& path) {
  if (status != 0) fail(what, path, status);
}

[[noreturn]] inline void invalid(const std::string& path, const std::string& why) {
  SPIP_THROW(spip::Error, "FITS: cannot write '" + path + "': " + why);
}

// ---------------------------------------------------------------- files

// An open fitsfile*. The destructor closes quietly because it only runs on
// the way out of a failure; close() is the path that reports errors, since
// closing is when CFITSIO flushes its buffers.
class FitsFile {
 public:
  static FitsFile create(const std::string& path) {
    FitsFile file(path);
    int status = 0;
    fits_create_diskfile(&file.fptr_, path.c_str(), &status);
    if (status != 0) {
      file.fptr_ = nullptr;
      fail("create", path, status);
    }
    return file;
  }

  static FitsFile open(const std::string& path, int mode) {
    FitsFile file(path);
    int status = 0;
    fits_open_diskfile(&file.fptr_, path.c_str(), mode, &status);
    if (status != 0) {
      file.fptr_ = nullptr;
      fail(mode == READWRITE ? "open for writing" : "open", path, status);
    }
    return file;
  }

  FitsFile(FitsFile&& other) noexcept
      : fptr_(std::exchange(other.fptr_, nullptr)), path_(std::move(other.path_)) {}
  FitsFile& operator=(FitsFile&&) = delete;
  FitsFile(const FitsFile&) = delete;
  FitsFile& operator=(const FitsFile&) = delete;

  ~FitsFile() {
    if (fptr_ != nullptr) {
      int status = 0;
      fits_close_file(fptr_, &status);
      fits_clear_errmsg();
    }
  }

  void close() {
    int status = 0;
    // CFITSIO frees the fitsfile even when closing fails.
    fits_close_file(std::exchange(fptr_, nullptr), &status);
    check(status, "write", path_);
  }

  fitsfile* get() const { return fptr_; }
  const std::string& path() const { return path_; }

 private:
  explicit FitsFile(std::string path) : path_(std::move(path)) {}

  fitsfile* fptr_ = nullptr;
  std::string path_;
};

// Removes a partial file unless the operation that writes it completes, so a
// failure leaves nothing behind.
class PartialFileGuard {
 public:
  explicit PartialFileGuard(std::string path) : path_(std::move(path)) {}
  PartialFileGuard(const PartialFileGuard&) = delete;
  PartialFileGuard& operator=(const PartialFileGuard&) = delete;
  ~PartialFileGuard() {
    if (armed_) {
      std::error_code ec;
      std::filesystem::remove(path_, ec);
    }
  }
  void release() { armed_ = false; }

 private:
  std::string path_;
  bool armed_ = true;
};

inline void remove_stale(const std::string& path) {
  // CFITSIO refuses to create over an existing file; a leftover partial file
  // is from an interrupted run and carries nothing worth keeping.
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

inline void rename_into_place(const std::string& from, const std::string& to) {
  const std::error_code ec = durable_rename(from, to);  // atomic on POSIX, and replaces an existing file
  if (ec) SPIP_THROW(spip::Error, "FITS: cannot rename '" + from + "' to '" + to + "': " + ec.message());
}

}  // namespace spip::fits::detail
