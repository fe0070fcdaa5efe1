#include <omp.h>

#include <algorithm>
#include <cstring>

#include "detail/staged_copy.hpp"

namespace spip::cuda::detail {

// One piece between pageable and pinned memory, split over the threads: one thread's
// memcpy moves a fraction of what the link does.
void StagedCopy::copy_on_threads(char* to, const char* from, std::size_t bytes) const {
  constexpr std::size_t stripe = 256u << 10;
  const auto stripes = static_cast<long long>((bytes + stripe - 1) / stripe);
  const int threads = host_threads_ > 0 ? host_threads_ : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (stripes > 1 && threads > 1)
  for (long long s = 0; s < stripes; ++s) {
    const std::size_t at = static_cast<std::size_t>(s) * stripe;
    std::memcpy(to + at, from + at, std::min(stripe, bytes - at));
  }
}

StagedCopy::StagedCopy(std::size_t half_bytes, int host_threads)
    : half_bytes_(half_bytes), host_threads_(host_threads) {
  if (half_bytes == 0) SPIP_THROW(Error, "StagedCopy: halves of 0 bytes");
  for (cudaEvent_t& event : done_) {
    const cudaError_t made = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (made != cudaSuccess) {  // the destructor will not run: no event is left behind
      for (cudaEvent_t other : done_)
        if (other) cudaEventDestroy(other);
      SPIP_CUDA_CHECK(made);
    }
  }
}

StagedCopy::~StagedCopy() {
  for (cudaEvent_t event : done_) cudaEventDestroy(event);
}

std::size_t StagedCopy::piece_bytes(std::size_t bytes, std::size_t piece) const {
  return std::min(half_bytes_, bytes - piece * half_bytes_);
}

bool StagedCopy::stages(std::size_t bytes) {
  if (bytes <= 2 * half_bytes_) return false;
  if (!buffer_.get()) buffer_ = PinnedBuffer(2 * half_bytes_);
  return true;
}

// The next piece's download runs while the host copies the last one out.
void StagedCopy::to_host(void* host, const void* device, std::size_t bytes, cudaStream_t stream) {
  const auto* from = static_cast<const char*>(device);
  auto* to = static_cast<char*>(host);
  if (!stages(bytes)) {
    SPIP_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, stream));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  const std::size_t pieces = (bytes + half_bytes_ - 1) / half_bytes_;
  const auto enqueue = [&](std::size_t piece) {
    SPIP_CUDA_CHECK(cudaMemcpyAsync(half(piece), from + piece * half_bytes_, piece_bytes(bytes, piece),
                                    cudaMemcpyDeviceToHost, stream));
    SPIP_CUDA_CHECK(cudaEventRecord(done_[piece % 2], stream));
  };
  enqueue(0);
  for (std::size_t piece = 0; piece < pieces; ++piece) {
    if (piece + 1 < pieces) enqueue(piece + 1);  // into the half copied out last time
    SPIP_CUDA_CHECK(cudaEventSynchronize(done_[piece % 2]));
    copy_on_threads(to + piece * half_bytes_, half(piece), piece_bytes(bytes, piece));
  }
}

// The host fills one half while the link empties the other.
void StagedCopy::to_device(void* device, const void* host, std::size_t bytes, cudaStream_t stream) {
  const auto* from = static_cast<const char*>(host);
  auto* to = static_cast<char*>(device);
  if (!stages(bytes)) {
    SPIP_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  const std::size_t pieces = (bytes + half_bytes_ - 1) / half_bytes_;
  for (std::size_t piece = 0; piece < pieces; ++piece) {
    if (piece >= 2) SPIP_CUDA_CHECK(cudaEventSynchronize(done_[piece % 2]));  // the half's last upload is done
    copy_on_threads(half(piece), from + piece * half_bytes_, piece_bytes(bytes, piece));
    SPIP_CUDA_CHECK(cudaMemcpyAsync(to + piece * half_bytes_, half(piece), piece_bytes(bytes, piece),
                                    cudaMemcpyHostToDevice, stream));
    SPIP_CUDA_CHECK(cudaEventRecord(done_[piece % 2], stream));
  }
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace spip::cuda::detail
