#pragma once
// Copies between pageable host memory and the device through a pinned buffer in two
// halves, kept for the copier's life: the link fills or drains one half while the
// host's threads copy the other.
// The driver's own pageable copies stage through one host thread's memcpy, which runs at
// a fraction of the link's rate (bench_gpu's link rows), and a channel's images or a
// slab's cubes are too large to keep pinned. Copies that fit the buffer go through the
// driver, and the buffer is pinned at the first that does not: pinning costs
// milliseconds, more than staging saves on a few MB, and RM synthesis makes a copier per
// row group, whose spectra are often that small.
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
  std::size_t piece_bytes(std::size_t bytes, std::size_t piece) const;
  // False where the driver copies `bytes` itself; otherwise pins the buffer if not yet.
  bool stages(std::size_t bytes);
  void copy_on_threads(char* to, const char* from, std::size_t bytes) const;
  std::size_t half_bytes_;
  int host_threads_;
  PinnedBuffer buffer_;  // empty until a copy needs it
  std::array<cudaEvent_t, 2> done_{};  // the last link copy through each half
};

}  // namespace spip::cuda::detail
