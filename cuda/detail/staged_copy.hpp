#pragma once
// Copies between pageable host memory and the device through a pinned buffer in two
// halves, kept for the copier's life: the link fills or drains one half while the
// host's threads copy the other.
// The driver's own pageable copies stage through one host thread's memcpy, which runs at
// a fraction of the link's rate, and a channel's images or a slab's cubes are too large
// to keep pinned.
#include <array>
#include <cstddef>

#include "cuda_check.hpp"

namespace spip::cuda::detail {

class StagedCopy {
 public:
  // Halves of `half_bytes`, on the current device's context; the host's side on
  // `host_threads` threads (0: OpenMP's count).
  explicit StagedCopy(std::size_t half_bytes = 8u << 20, int host_threads = 0);
  ~StagedCopy();
  StagedCopy(const StagedCopy&) = delete;
  StagedCopy& operator=(const StagedCopy&) = delete;

  // Each returns when its copy is done, the link's part run on `stream`.
  void to_host(void* host, const void* device, std::size_t bytes, cudaStream_t stream);
  void to_device(void* device, const void* host, std::size_t bytes, cudaStream_t stream);

 private:
  char* half(std::size_t piece) const { return buffer_.get() + piece % 2 * half_bytes_; }
  void copy_on_threads(char* to, const char* from, std::size_t bytes) const;
  std::size_t half_bytes_;
  int host_threads_;
  PinnedBuffer buffer_;
  std::array<cudaEvent_t, 2> done_{};  // the last link copy through each half
};

}  // namespace spip::cuda::detail
