#include <cub/device/device_reduce.cuh>

#include <algorithm>
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

__global__ void search_values_kernel(PeakSearch search, const float* residual, long long pixels,
                                     deconv::PeakCandidate* candidates) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel < pixels) candidates[pixel] = {deconv::squared_search_value(search, residual, pixel, pixels), pixel};
}

__global__ void take_component_kernel(const deconv::PeakCandidate* best, double gain, double stop_level,
                                      float* residual, float* model, long long pixels, MinorCycleState* state) {
  if (state->done) return;
  if (state->iterations >= state->max_iterations || !(sqrt(static_cast<double>(best->value)) > stop_level)) {
    state->done = 1;
    return;
  }
  const long long pixel = best->pixel;
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

// No pixel: below every squared search value.
constexpr deconv::PeakCandidate no_peak{-1.0f, 0};

// DeviceReduce::Reduce with our own operator has the same signature from CUDA 12.0
// (CUB 2.0) to 13, unlike ArgMax, whose separate-outputs form only came with CCCL 2.8
// and whose KeyValuePair form CCCL 3 deprecates. Images stay below 2^31 pixels.
cudaError_t reduce_to_best(void* scratch, std::size_t& scratch_bytes, const deconv::PeakCandidate* candidates,
                           deconv::PeakCandidate* best, long long pixels, cudaStream_t stream) {
  return cub::DeviceReduce::Reduce(scratch, scratch_bytes, candidates, best, static_cast<int>(pixels),
                                   deconv::StrongerPeak{}, no_peak, stream);
}

}  // namespace

MinorCycle::MinorCycle(long long pixels)
    : pixels_(pixels), candidates_(static_cast<std::size_t>(pixels)), best_(1), state_(1),
      host_state_(sizeof(MinorCycleState) + sizeof(deconv::PeakCandidate)) {
  std::size_t scratch_bytes = 0;
  SPIP_CUDA_CHECK(reduce_to_best(nullptr, scratch_bytes, candidates_.get(), best_.get(), pixels_, nullptr));
  scratch_ = DeviceArray<char>(std::max<std::size_t>(scratch_bytes, 1));  // a null scratch means "size query"
}

void MinorCycle::enqueue_search(PeakSearch search, const float* residual, cudaStream_t stream) {
  search_values_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(
      search, residual, pixels_, candidates_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
  std::size_t scratch_bytes = scratch_.bytes();
  SPIP_CUDA_CHECK(reduce_to_best(scratch_.get(), scratch_bytes, candidates_.get(), best_.get(), pixels_, stream));
}

double MinorCycle::peak(PeakSearch search, const float* residual, cudaStream_t stream) {
  enqueue_search(search, residual, stream);
  SPIP_CUDA_CHECK(
      cudaMemcpyAsync(&host_best(), best_.get(), sizeof(deconv::PeakCandidate), cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::sqrt(static_cast<double>(host_best().value));
}

int MinorCycle::run(PeakSearch search, float* residual, const float* psf, int size, double gain, double stop_level,
                    int max_iterations, float* model, cudaStream_t stream) {
  host_state() = MinorCycleState{0, {0, 0, 0, 0}, 0, max_iterations, 0};
  SPIP_CUDA_CHECK(cudaMemcpyAsync(state_.get(), &host_state(), sizeof(MinorCycleState), cudaMemcpyHostToDevice, stream));
  // The state copy above reads host_state_ when the stream gets to it; wait before reuse.
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  while (!host_state().done) {
    for (int i = 0; i < iterations_per_look; ++i) {
      enqueue_search(search, residual, stream);
      take_component_kernel<<<1, 1, 0, stream>>>(best_.get(), gain, stop_level, residual, model, pixels_,
                                                  state_.get());
      subtract_component_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(
          state_.get(), psf, size, residual);
      SPIP_CUDA_CHECK(cudaGetLastError());
    }
    SPIP_CUDA_CHECK(cudaMemcpyAsync(&host_state(), state_.get(), sizeof(MinorCycleState), cudaMemcpyDeviceToHost, stream));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return host_state().iterations;
}

}  // namespace spip::cuda::detail
