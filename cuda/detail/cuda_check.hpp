#pragma once
// Error checks and owning buffers for the CUDA sources (CUDA code only in cuda/).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>
#include <string>
#include <utility>

#include "spip/error.hpp"

namespace spip::cuda::detail {

inline void check(cudaError_t status, const char* what, const char* file, int line) {
  if (status != cudaSuccess)
    throw Error(std::string("CUDA ") + what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")",
                file, line);
}
inline void check(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS ") + what + ": status " + std::to_string(static_cast<int>(status)), file, line);
}
inline void check(cufftResult status, const char* what, const char* file, int line) {
  if (status != CUFFT_SUCCESS)
    throw Error(std::string("cuFFT ") + what + ": status " + std::to_string(static_cast<int>(status)), file, line);
}

#define SPIP_CUDA_CHECK(call) ::spip::cuda::detail::check((call), #call, __FILE__, __LINE__)

// Device array freed on every path.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t count) : size_(count) {
    if (count) SPIP_CUDA_CHECK(cudaMalloc(&data_, count * sizeof(T)));
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr; o.size_ = 0; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  T* get() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// Page-locked host memory, so that copies run asynchronously on a stream.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) SPIP_CUDA_CHECK(cudaHostAlloc(&data_, bytes, cudaHostAllocDefault));
  }
  ~PinnedBuffer() { cudaFreeHost(data_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) { o.data_ = nullptr; o.bytes_ = 0; }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  char* get() const { return static_cast<char*>(data_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Blocks of `threads` covering `count` items.
inline unsigned blocks_for(long long count, int threads) {
  return static_cast<unsigned>((count + threads - 1) / threads);
}

}  // namespace spip::cuda::detail
