#include "spip/stages/plane_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "spip/error.hpp"

namespace spip::pipeline {
namespace {

[[noreturn]] void scratch_failure(const std::string& dir, const std::string& what) {
  SPIP_THROW(InputError, "parallel.scratch " + dir + ": " + what + ": " + std::strerror(errno));
}

// An unnamed file in `dir`: nothing is left behind, however the run ends. The folder
// itself is made where its parent exists (a job's node-local folder), but no more: a
// mistyped path would have made a whole tree, even at the root.
int unnamed_file(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directory(dir, error);
  std::string path = (std::filesystem::path(dir) / "spip-planes-XXXXXX").string();
  const int fd = mkstemp(path.data());
  if (fd < 0) scratch_failure(dir, "cannot create a file");
  unlink(path.c_str());
  return fd;
}

}  // namespace

void PlaneStore::check_scratch(const std::string& scratch_dir) { close(unnamed_file(scratch_dir)); }

PlaneStore::PlaneStore(int channels, int slots, std::size_t pixels, const std::string& scratch_dir)
    : slots_(slots), pixels_(pixels), scratch_dir_(scratch_dir),
      present_(static_cast<std::size_t>(channels) * static_cast<std::size_t>(slots), 0) {
  if (scratch_dir.empty()) {
    planes_.resize(present_.size());
    return;
  }
  fd_ = unnamed_file(scratch_dir);
}

PlaneStore::~PlaneStore() {
  if (fd_ >= 0) close(fd_);
}

double PlaneStore::bytes(int channels, int slots, std::size_t pixels) {
  return 4.0 * channels * slots * static_cast<double>(pixels);
}

std::size_t PlaneStore::index(int channel, int slot) const {
  return static_cast<std::size_t>(channel) * static_cast<std::size_t>(slots_) + static_cast<std::size_t>(slot);
}

void PlaneStore::put(int channel, int slot, const float* plane) {
  const std::size_t at = index(channel, slot);
  if (fd_ < 0) {
    planes_[at].assign(plane, plane + pixels_);
  } else {
    const std::size_t bytes = pixels_ * sizeof(float);
    const char* data = reinterpret_cast<const char*>(plane);
    for (std::size_t done = 0; done < bytes;) {
      const ssize_t n = pwrite(fd_, data + done, bytes - done, static_cast<off_t>(at * bytes + done));
      if (n < 0) scratch_failure(scratch_dir_, "cannot write a kept plane");
      done += static_cast<std::size_t>(n);
    }
  }
  present_[at] = 1;
}

void PlaneStore::release(int channel, int slot) {
  const std::size_t at = index(channel, slot);
  if (fd_ < 0) std::vector<float>().swap(planes_[at]);
  present_[at] = 0;
}

void PlaneStore::read(int channel, int slot, std::size_t first, std::size_t count, float* out) const {
  const std::size_t at = index(channel, slot);
  if (!present_[at]) {
    std::fill(out, out + count, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (fd_ < 0) {
    std::copy_n(planes_[at].data() + first, count, out);
    return;
  }
  const std::size_t bytes = count * sizeof(float);
  char* data = reinterpret_cast<char*>(out);
  const off_t offset = static_cast<off_t>((at * pixels_ + first) * sizeof(float));
  for (std::size_t done = 0; done < bytes;) {
    const ssize_t n = pread(fd_, data + done, bytes - done, offset + static_cast<off_t>(done));
    if (n <= 0) scratch_failure(scratch_dir_, "cannot read a kept plane back");
    done += static_cast<std::size_t>(n);
  }
  scratch_read_ += static_cast<double>(bytes);
}

}  // namespace spip::pipeline
