#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <cstring>

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
                                     const std::uint8_t* mask, deconv::PeakCandidate* candidates) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= pixels) return;
  const float value = mask && !mask[pixel] ? 0.0f : deconv::squared_search_value(search, residual, pixel, pixels);
  candidates[pixel] = {value, pixel};
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

__global__ void subtract_component_kernel(const MinorCycleState* state, const float* psf, int psf_side, int n,
                                          float* residual) {
  if (state->done) return;
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long pixels = static_cast<long long>(n) * n;
  if (pixel >= pixels) return;
  const long long at =
      deconv::psf_pixel_under(static_cast<int>(pixel % n), static_cast<int>(pixel / n),
                              static_cast<int>(state->pixel % n), static_cast<int>(state->pixel / n), psf_side);
  if (at < 0) return;
  for (int s = 0; s < 4; ++s)
    if (state->flux[s] != 0) residual[s * pixels + pixel] -= state->flux[s] * psf[at];
}

__global__ void mask_model_pixels_kernel(const float* model, long long pixels, std::uint8_t* mask) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= pixels) return;
  bool any = false;
  for (int s = 0; s < 4; ++s) any = any || model[s * pixels + pixel] != 0.0f;
  mask[pixel] = any ? 1 : 0;
}

// ---- the sub-minor loop ------------------------------------------------------------

// The pixels above the stop, in any order (sorted afterwards); counts all of them, keeps
// at most `capacity`.
__global__ void select_active_kernel(PeakSearch search, const float* residual, long long pixels,
                                     const std::uint8_t* mask, float stop_squared, long long capacity, long long* active,
                                     unsigned long long* count) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= pixels || (mask && !mask[pixel])) return;
  if (!(deconv::squared_search_value(search, residual, pixel, pixels) > stop_squared)) return;
  const unsigned long long slot = atomicAdd(count, 1ull);
  if (static_cast<long long>(slot) < capacity) active[slot] = pixel;
}

__global__ void gather_active_kernel(const float* residual, long long pixels, const long long* active, long long count,
                                     float* values) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  for (int s = 0; s < 4; ++s) values[s * count + i] = residual[s * pixels + active[i]];
}

// Candidates by position in the active list, which is in pixel order: the reduction's
// tie rule (the lower index) is the CPU's (the lower pixel).
__global__ void search_active_kernel(PeakSearch search, const float* values, long long count,
                                     deconv::PeakCandidate* candidates) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) candidates[i] = {deconv::squared_search_value(search, values, i, count), i};
}

// A pixel taken again adds to its component, from 0 as the CPU's (clean_active_set), so
// that a pass is bounded by the iterations alone and its model sums as the CPU's does.
__global__ void take_active_component_kernel(const deconv::PeakCandidate* best, double gain, double stop_level,
                                             const float* values, long long count, const long long* active,
                                             DeviceComponent* components, int* order, MinorCycleState* state) {
  if (state->done) return;
  if (state->iterations >= state->max_iterations || !(sqrt(static_cast<double>(best->value)) > stop_level)) {
    state->done = 1;
    return;
  }
  DeviceComponent& component = components[best->pixel];
  if (component.pixel < 0) {
    component = DeviceComponent{active[best->pixel], {0, 0, 0, 0}};
    order[state->found++] = static_cast<int>(best->pixel);
  }
  state->pixel = best->pixel;  // its place in the active list
  for (int s = 0; s < 4; ++s) {
    state->flux[s] = static_cast<float>(gain * values[s * count + best->pixel]);
    component.flux[s] += state->flux[s];
  }
  ++state->iterations;
}

__global__ void subtract_active_kernel(const MinorCycleState* state, const float* psf, int psf_side, int n,
                                       const long long* active, long long count, float* values) {
  if (state->done) return;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const long long taken = active[state->pixel], pixel = active[i];
  const long long at = deconv::psf_pixel_under(static_cast<int>(pixel % n), static_cast<int>(pixel / n),
                                               static_cast<int>(taken % n), static_cast<int>(taken / n), psf_side);
  if (at < 0) return;
  for (int s = 0; s < 4; ++s) values[s * count + i] -= state->flux[s] * psf[at];
}

// Every component found, from the whole residual and into the model, in the order first taken.
__global__ void apply_components_kernel(const DeviceComponent* components, const int* order, int found,
                                        const float* psf, int psf_side, int n, float* residual, float* model) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long pixels = static_cast<long long>(n) * n;
  if (pixel >= pixels) return;
  const int x = static_cast<int>(pixel % n), y = static_cast<int>(pixel / n);
  for (int k = 0; k < found; ++k) {
    const DeviceComponent& c = components[order[k]];
    const long long at =
        deconv::psf_pixel_under(x, y, static_cast<int>(c.pixel % n), static_cast<int>(c.pixel / n), psf_side);
    for (int s = 0; s < 4; ++s) {
      if (at >= 0) residual[s * pixels + pixel] -= c.flux[s] * psf[at];
      if (c.pixel == pixel) model[s * pixels + pixel] += c.flux[s];
    }
  }
}

// No pixel: below every squared search value.
constexpr deconv::PeakCandidate no_peak{-1.0f, 0};

// DeviceReduce::Reduce with our own operator has the same signature from CUDA 12.0
// (CUB 2.0) to 13, unlike ArgMax, whose separate-outputs form only came with CCCL 2.8
// and whose KeyValuePair form CCCL 3 deprecates. Images stay below 2^31 pixels.
cudaError_t reduce_to_best(void* scratch, std::size_t& scratch_bytes, const deconv::PeakCandidate* candidates,
                           deconv::PeakCandidate* best, long long count, cudaStream_t stream) {
  return cub::DeviceReduce::Reduce(scratch, scratch_bytes, candidates, best, static_cast<int>(count),
                                   deconv::StrongerPeak{}, no_peak, stream);
}

// Pixel indices below 2^bits: only those bits are sorted. The double buffer spares CUB a
// copy of the keys in its scratch; the sorted keys are in keys.Current().
cudaError_t sort_pixels(void* scratch, std::size_t& scratch_bytes, cub::DoubleBuffer<long long>& keys, long long count,
                        int bits, cudaStream_t stream) {
  return cub::DeviceRadixSort::SortKeys(scratch, scratch_bytes, keys, static_cast<int>(count), 0, bits, stream);
}

int bits_for(long long pixels) {
  int bits = 1;
  while (bits < 63 && (1LL << bits) < pixels) ++bits;
  return bits;
}

// The CPU's limit on the sub-minor loop's pixels (deconv's max_active_pixels).
long long active_capacity(long long pixels) { return std::min(pixels, std::max(pixels / 16, 1024LL)); }

}  // namespace

std::size_t MinorCycle::bytes_per_pixel() {
  // A candidate per pixel, the model the divergence guard keeps (4 Stokes) and the PSF of
  // twice the image's side (4 pixels of it); per pixel of capacity (at most 1/16 of them,
  // or 1024): two pixel lists, four values, a component and its place in the order; rounded up.
  constexpr std::size_t per_active = 2 * sizeof(long long) + 4 * sizeof(float) + sizeof(DeviceComponent) + sizeof(int);
  return sizeof(deconv::PeakCandidate) + 8 * sizeof(float) + (per_active + 15) / 16;
}

MinorCycle::MinorCycle(long long pixels)
    : pixels_(pixels), capacity_(active_capacity(pixels)), candidates_(static_cast<std::size_t>(pixels)), best_(1),
      state_(1), active_(static_cast<std::size_t>(capacity_)), sorted_(static_cast<std::size_t>(capacity_)),
      values_(static_cast<std::size_t>(4 * capacity_)), components_(static_cast<std::size_t>(capacity_)),
      order_(static_cast<std::size_t>(capacity_)), count_(1),
      host_state_(sizeof(MinorCycleState) + sizeof(deconv::PeakCandidate) + sizeof(unsigned long long)) {
  std::size_t reduce_bytes = 0, sort_bytes = 0;
  SPIP_CUDA_CHECK(reduce_to_best(nullptr, reduce_bytes, candidates_.get(), best_.get(), pixels_, nullptr));
  cub::DoubleBuffer<long long> keys(active_.get(), sorted_.get());
  SPIP_CUDA_CHECK(sort_pixels(nullptr, sort_bytes, keys, capacity_, bits_for(pixels_), nullptr));
  scratch_ = DeviceArray<char>(std::max({reduce_bytes, sort_bytes, std::size_t{1}}));  // null means "size query"
}

void MinorCycle::enqueue_reduction(long long count, cudaStream_t stream) {
  std::size_t scratch_bytes = scratch_.bytes();
  SPIP_CUDA_CHECK(reduce_to_best(scratch_.get(), scratch_bytes, candidates_.get(), best_.get(), count, stream));
}

void MinorCycle::enqueue_search(PeakSearch search, const float* residual, const std::uint8_t* mask,
                                cudaStream_t stream) {
  search_values_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(
      search, residual, pixels_, mask, candidates_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
  enqueue_reduction(pixels_, stream);
}

double MinorCycle::peak(PeakSearch search, const float* residual, const std::uint8_t* mask, cudaStream_t stream) {
  enqueue_search(search, residual, mask, stream);
  SPIP_CUDA_CHECK(
      cudaMemcpyAsync(&host_best(), best_.get(), sizeof(deconv::PeakCandidate), cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::sqrt(static_cast<double>(host_best().value));
}

void MinorCycle::start(int max_iterations, cudaStream_t stream) {
  host_state() = MinorCycleState{0, {0, 0, 0, 0}, 0, max_iterations, 0, 0};
  SPIP_CUDA_CHECK(cudaMemcpyAsync(state_.get(), &host_state(), sizeof(MinorCycleState), cudaMemcpyHostToDevice, stream));
  // The state copy above reads host_state_ when the stream gets to it; wait before reuse.
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
}

bool MinorCycle::finished(cudaStream_t stream) {
  SPIP_CUDA_CHECK(cudaMemcpyAsync(&host_state(), state_.get(), sizeof(MinorCycleState), cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host_state().done != 0;
}

int MinorCycle::run(PeakSearch search, float* residual, deconv::MinorPsf psf, int size, double gain,
                    double stop_level, int max_iterations, float* model, const std::uint8_t* mask,
                    cudaStream_t stream) {
  start(max_iterations, stream);
  do {
    for (int i = 0; i < iterations_per_look; ++i) {
      enqueue_search(search, residual, mask, stream);
      take_component_kernel<<<1, 1, 0, stream>>>(best_.get(), gain, stop_level, residual, model, pixels_,
                                                  state_.get());
      subtract_component_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(
          state_.get(), psf.data, psf.side, size, residual);
      SPIP_CUDA_CHECK(cudaGetLastError());
    }
  } while (!finished(stream));
  return host_state().iterations;
}

void MinorCycle::mask_model_pixels(const float* model, std::uint8_t* mask, cudaStream_t stream) {
  mask_model_pixels_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(model, pixels_,
                                                                                                     mask);
  SPIP_CUDA_CHECK(cudaGetLastError());
}

// The pixels above the stop, sorted into pixel order (at active_list_); returns how
// many there are (more than capacity_: not kept).
long long MinorCycle::select_active(PeakSearch search, const float* residual, const std::uint8_t* mask,
                                    double stop_level, cudaStream_t stream) {
  SPIP_CUDA_CHECK(cudaMemsetAsync(count_.get(), 0, sizeof(unsigned long long), stream));
  select_active_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(
      search, residual, pixels_, mask, static_cast<float>(stop_level * stop_level), capacity_, active_.get(),
      count_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
  SPIP_CUDA_CHECK(
      cudaMemcpyAsync(&host_count(), count_.get(), sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto count = static_cast<long long>(host_count());
  if (count > 0 && count <= capacity_) {
    cub::DoubleBuffer<long long> keys(active_.get(), sorted_.get());
    std::size_t scratch_bytes = scratch_.bytes();
    SPIP_CUDA_CHECK(sort_pixels(scratch_.get(), scratch_bytes, keys, count, bits_for(pixels_), stream));
    active_list_ = keys.Current();
  }
  return count;
}

int MinorCycle::run_subminor(PeakSearch search, float* residual, deconv::MinorPsf psf, int size, double gain,
                             double stop_level, int max_iterations, float* model, const std::uint8_t* mask,
                             cudaStream_t stream) {
  int done = 0;
  while (done < max_iterations && peak(search, residual, mask, stream) > stop_level) {
    const long long count = select_active(search, residual, mask, stop_level, stream);
    // The peak test rounds in double, the selection in float: a peak just above the stop
    // may select nothing, and there is then nothing left to clean.
    if (count == 0) break;
    if (count > capacity_) {  // the rest of the call as plain Hogbom over the whole image
      done += run(search, residual, psf, size, gain, stop_level, max_iterations - done, model, mask, stream);
      break;
    }
    const unsigned blocks = blocks_for(count, threads_per_block);
    gather_active_kernel<<<blocks, threads_per_block, 0, stream>>>(residual, pixels_, active_list_, count,
                                                                     values_.get());
    SPIP_CUDA_CHECK(cudaGetLastError());
    // All bits set: every component's pixel -1, not yet taken.
    SPIP_CUDA_CHECK(cudaMemsetAsync(components_.get(), 0xff, static_cast<std::size_t>(count) * sizeof(DeviceComponent),
                                    stream));
    start(max_iterations - done, stream);
    do {
      for (int i = 0; i < iterations_per_look; ++i) {
        search_active_kernel<<<blocks, threads_per_block, 0, stream>>>(search, values_.get(), count, candidates_.get());
        enqueue_reduction(count, stream);
        take_active_component_kernel<<<1, 1, 0, stream>>>(best_.get(), gain, stop_level, values_.get(), count,
                                                           active_list_, components_.get(), order_.get(),
                                                           state_.get());
        subtract_active_kernel<<<blocks, threads_per_block, 0, stream>>>(state_.get(), psf.data, psf.side, size,
                                                                         active_list_, count, values_.get());
        SPIP_CUDA_CHECK(cudaGetLastError());
      }
    } while (!finished(stream));
    const int iterations = host_state().iterations;
    if (iterations == 0) break;
    apply_components_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(
        components_.get(), order_.get(), host_state().found, psf.data, psf.side, size, residual, model);
    SPIP_CUDA_CHECK(cudaGetLastError());
    done += iterations;
  }
  return done;
}

namespace {

// |x - median| in float, as deconv::mad_sigma forms it, with the median read on the device.
__global__ void deviations_kernel(const float* plane, long long count, const float* median, float* deviations) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) deviations[i] = fabsf(plane[i] - *median);
}

// The largest |value|: non-negative floats order as their bit patterns. NaNs are passed
// over, as std::max passes them over on the host.
__global__ void abs_peak_kernel(const float* values, long long count, unsigned* peak_bits) {
  unsigned local = 0;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float v = fabsf(values[i]);
    if (!isnan(v)) local = max(local, __float_as_uint(v));
  }
  for (int offset = 16; offset > 0; offset /= 2) local = max(local, __shfl_down_sync(0xffffffffu, local, offset));
  if (threadIdx.x % 32 == 0) atomicMax(peak_bits, local);
}

cudaError_t sort_values(void* scratch, std::size_t& scratch_bytes, const float* in, float* out, long long count,
                        cudaStream_t stream) {
  return cub::DeviceRadixSort::SortKeys(scratch, scratch_bytes, in, out, static_cast<int>(count), 0, 32, stream);
}

}  // namespace

// The values, the sorted ones, and the copy of the keys that CUB keeps in its scratch
// for a sort from one array into another.
std::size_t ResidualStatistics::bytes_per_pixel() { return 3 * sizeof(float); }

ResidualStatistics::ResidualStatistics(long long pixels)
    : pixels_(pixels), values_(static_cast<std::size_t>(pixels)), sorted_(static_cast<std::size_t>(pixels)),
      peak_bits_(1), host_(sizeof(float) + sizeof(unsigned)) {
  std::size_t sort_bytes = 0;
  SPIP_CUDA_CHECK(sort_values(nullptr, sort_bytes, values_.get(), sorted_.get(), pixels_, nullptr));
  scratch_ = DeviceArray<char>(std::max(sort_bytes, std::size_t{1}));
}

ResidualStatistics::Values ResidualStatistics::measure(const float* residual, cudaStream_t stream) {
  if (pixels_ == 0) return {0.0, 0.0};
  std::size_t scratch_bytes = scratch_.bytes();
  const float* median = sorted_.get() + pixels_ / 2;
  SPIP_CUDA_CHECK(sort_values(scratch_.get(), scratch_bytes, residual, sorted_.get(), pixels_, stream));
  deviations_kernel<<<blocks_for(pixels_, threads_per_block), threads_per_block, 0, stream>>>(residual, pixels_, median,
                                                                                              values_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
  // The deviations sort into sorted_ once the kernel has read the median from it.
  SPIP_CUDA_CHECK(sort_values(scratch_.get(), scratch_bytes, values_.get(), sorted_.get(), pixels_, stream));
  SPIP_CUDA_CHECK(cudaMemsetAsync(peak_bits_.get(), 0, sizeof(unsigned), stream));
  abs_peak_kernel<<<std::min(blocks_for(4 * pixels_, threads_per_block), 1024u), threads_per_block, 0, stream>>>(
      residual, 4 * pixels_, peak_bits_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
  auto* deviation = reinterpret_cast<float*>(host_.get());
  auto* peak_bits = reinterpret_cast<unsigned*>(host_.get() + sizeof(float));
  SPIP_CUDA_CHECK(cudaMemcpyAsync(deviation, median, sizeof(float), cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaMemcpyAsync(peak_bits, peak_bits_.get(), sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  float peak = 0;
  std::memcpy(&peak, peak_bits, sizeof peak);
  return {deconv::sigma_per_mad * *deviation, static_cast<double>(peak)};
}

}  // namespace spip::cuda::detail
