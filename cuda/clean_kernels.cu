#include <cub/device/device_reduce.cuh>

#include <cmath>

#include "detail/clean_kernels.hpp"
#include "detail/cuda_check.hpp"
#include "spip/deconv/clean_math.hpp"

namespace spip::cuda::detail {
namespace {

constexpr int threads_per_block = 256;
// Iterations enqueued between two looks at the state: enough to hide the launch
// latency of the look, few enough that little work is wasted after the stop.
constexpr int iterations_per_look = 32;

__global__ void search_values_kernel(PeakSearch search, const float* residual, long long pixels, float* values) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel < pixels) values[pixel] = deconv::squared_search_value(search, residual, pixel, pixels);
}

__global__ void take_component_kernel(const float* best_value, const long long* best_pixel, double gain, double stop_level,
                                      float* residual, float* model, long long pixels, MinorCycleState* state) {
  if (state->done) return;
  if (state->iterations >= state->max_iterations || !(sqrt(static_cast<double>(*best_value)) > stop_level)) {
    state->done = 1;
    return;
  }
  const long long pixel = *best_pixel;
  state->pixel = pixel;
  for (int s = 0; s < 4; ++s) {
    const float flux = static_cast<float>(gain * residual[s * pixels + pixel]);
    state->flux[s] = flux;
    model[s * pixels + pixel] += flux;
  }
  ++state->iterations;
}

__global__ void subtract_component_kernel(const MinorCycleState* state, const float* psf, int n, float* residual) {
  if (state->done) return;
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long pixels = static_cast<long long>(n) * n;
  if (pixel >= pixels) return;
  const long long at = deconv::psf_pixel_under(static_cast<int>(pixel % n), static_cast<int>(pixel / n),
                                               static_cast<int>(state->pixel % n), static_cast<int>(state->pixel / n), n);
  if (at < 0) return;
  for (int s = 0; s < 4; ++s)
    if (state->flux[s] != 0) residual[s * pixels + pixel] -= state->flux[s] * psf[at];
}

}  // namespace

MinorCycle::MinorCycle(long long pixels) : pixels_(pixels) {
  SPIP_CUDA_CHECK(cudaMalloc(&values_, pixels * sizeof(float)));
  SPIP_CUDA_CHECK(cudaMalloc(&best_value_, sizeof(float)));
  SPIP_CUDA_CHECK(cudaMalloc(&best_pixel_, sizeof(long long)));
  SPIP_CUDA_CHECK(cudaMalloc(&state_, sizeof(MinorCycleState)));
  SPIP_CUDA_CHECK(cudaHostAlloc(&host_state_, sizeof(MinorCycleState), cudaHostAllocDefault));
  SPIP_CUDA_CHECK(cudaHostAlloc(&host_best_, sizeof(float), cudaHostAllocDefault));
  SPIP_CUDA_CHECK(cub::DeviceReduce::ArgMax(nullptr, scratch_bytes_, values_, best_value_, best_pixel_, pixels_));
  SPIP_CUDA_CHECK(cudaMalloc(&scratch_, scratch_bytes_));
}

MinorCycle::~MinorCycle() {
  cudaFree(values_);
  cudaFree(best_value_);
  cudaFree(best_pixel_);
  cudaFree(state_);
  cudaFree(scratch_);
  cudaFreeHost(host_state_);
  cudaFreeHost(host_best_);
}

void MinorCycle::enqueue_search(PeakSearch search, const float* residual, cudaStream_t stream) {
  search_values_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(search, residual,
                                                                                                pixels_, values_);
  SPIP_CUDA_CHECK(cudaGetLastError());
  SPIP_CUDA_CHECK(cub::DeviceReduce::ArgMax(scratch_, scratch_bytes_, values_, best_value_, best_pixel_, pixels_, stream));
}

double MinorCycle::peak(PeakSearch search, const float* residual, cudaStream_t stream) {
  enqueue_search(search, residual, stream);
  SPIP_CUDA_CHECK(cudaMemcpyAsync(host_best_, best_value_, sizeof(float), cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::sqrt(static_cast<double>(*host_best_));
}

int MinorCycle::run(PeakSearch search, float* residual, const float* psf, int size, double gain, double stop_level,
                    int max_iterations, float* model, cudaStream_t stream) {
  *host_state_ = MinorCycleState{0, {0, 0, 0, 0}, 0, max_iterations, 0};
  SPIP_CUDA_CHECK(cudaMemcpyAsync(state_, host_state_, sizeof(MinorCycleState), cudaMemcpyHostToDevice, stream));
  // The state copy above reads host_state_ when the stream gets to it; wait before reuse.
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  while (!host_state_->done) {
    for (int i = 0; i < iterations_per_look; ++i) {
      enqueue_search(search, residual, stream);
      take_component_kernel<<<1, 1, 0, stream>>>(best_value_, best_pixel_, gain, stop_level, residual, model, pixels_,
                                                  state_);
      subtract_component_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(
          state_, psf, size, residual);
      SPIP_CUDA_CHECK(cudaGetLastError());
    }
    SPIP_CUDA_CHECK(cudaMemcpyAsync(host_state_, state_, sizeof(MinorCycleState), cudaMemcpyDeviceToHost, stream));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return host_state_->iterations;
}

}  // namespace spip::cuda::detail
