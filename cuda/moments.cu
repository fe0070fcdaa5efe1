#include <algorithm>
#include <vector>

#include "detail/cuda_check.hpp"
#include "spip/cuda/moments.hpp"
#include "spip/faraday/spectrum_math.hpp"

namespace spip::cuda {
namespace {

using detail::DeviceArray;
using detail::PinnedBuffer;

constexpr int quantities = 5;  // I, Q, U, V, P
constexpr int threads_per_block = 256;

__global__ void add_channel_kernel(const float* restored, long long pixels, double weight, double* sums) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  const long long block = faraday::power_orders * pixels;
  for (int s = 0; s < 4; ++s) faraday::add_power_terms(sums + s * block + p, pixels, restored[s * pixels + p], weight);
  const float pi = faraday::polarised_intensity(restored[pixels + p], restored[2 * pixels + p]);
  faraday::add_power_terms(sums + 4 * block + p, pixels, pi, weight);
}

}  // namespace

struct StokesPowerSums::Impl {
  int device;
  long long pixels;
  DeviceArray<double> sums;
  DeviceArray<float> planes;
  PinnedBuffer staging;
  cudaStream_t stream = nullptr;

  Impl(int index, std::size_t count)
      : device(index),
        pixels(static_cast<long long>(count)),
        sums(static_cast<std::size_t>(quantities) * faraday::power_orders * count),
        planes(4 * count),
        staging(4 * count * sizeof(float)) {
    SPIP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    SPIP_CUDA_CHECK(cudaMemsetAsync(sums.get(), 0, sums.bytes(), stream));
  }
  ~Impl() {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
};

std::size_t StokesPowerSums::device_bytes(std::size_t pixels) {
  return pixels * (static_cast<std::size_t>(quantities) * faraday::power_orders * sizeof(double) + 4 * sizeof(float));
}

StokesPowerSums::StokesPowerSums(int device, std::size_t pixels) {
  SPIP_CUDA_CHECK(cudaSetDevice(device));  // before Impl allocates
  impl_ = std::make_unique<Impl>(device, pixels);
}

StokesPowerSums::~StokesPowerSums() = default;

void StokesPowerSums::add_channel(const float* restored, double weight) {
  Impl& d = *impl_;
  SPIP_CUDA_CHECK(cudaSetDevice(d.device));
  // The previous channel's upload must be done before its pinned copy is overwritten.
  SPIP_CUDA_CHECK(cudaStreamSynchronize(d.stream));
  std::copy_n(restored, 4 * d.pixels, reinterpret_cast<float*>(d.staging.get()));
  SPIP_CUDA_CHECK(cudaMemcpyAsync(d.planes.get(), d.staging.get(), d.planes.bytes(), cudaMemcpyHostToDevice, d.stream));
  add_channel_kernel<<<detail::blocks_for(d.pixels, threads_per_block), threads_per_block, 0, d.stream>>>(
      d.planes.get(), d.pixels, weight, d.sums.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
}

std::vector<double> StokesPowerSums::values() const {
  const Impl& d = *impl_;
  SPIP_CUDA_CHECK(cudaSetDevice(d.device));
  std::vector<double> host(d.sums.size());
  SPIP_CUDA_CHECK(cudaMemcpyAsync(host.data(), d.sums.get(), d.sums.bytes(), cudaMemcpyDeviceToHost, d.stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(d.stream));
  return host;
}

}  // namespace spip::cuda
