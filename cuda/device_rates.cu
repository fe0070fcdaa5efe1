#include <algorithm>
#include <chrono>
#include <vector>

#include "detail/cublas_library.hpp"
#include "detail/cuda_check.hpp"
#include "detail/staged_copy.hpp"
#include "spip/cuda/device_rates.hpp"

namespace spip::cuda {
namespace {

using detail::DeviceArray;

// Times `repeats` calls of `work` on the default stream with events, after one warm-up.
template <class Work>
double seconds_per_call(int repeats, Work&& work) {
  cudaEvent_t start, stop;
  SPIP_CUDA_CHECK(cudaEventCreate(&start));
  SPIP_CUDA_CHECK(cudaEventCreate(&stop));
  work();
  SPIP_CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < repeats; ++i) work();
  SPIP_CUDA_CHECK(cudaEventRecord(stop));
  SPIP_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  SPIP_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1e-3 * ms / repeats;
}

// Bytes per second of `copy`, the best of `repeats` after a warm-up, host-timed
// (the staged copy's host side runs between its link copies).
template <class Copy>
double best_rate(std::size_t bytes, int repeats, Copy&& copy) {
  copy();
  SPIP_CUDA_CHECK(cudaDeviceSynchronize());
  double best = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    copy();
    SPIP_CUDA_CHECK(cudaDeviceSynchronize());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(bytes) / seconds);
  }
  return best;
}

}  // namespace

LinkRates link_rates(int device, std::size_t bytes, int repeats) {
  SPIP_CUDA_CHECK(cudaSetDevice(device));
  DeviceArray<char> on_device(bytes);
  detail::PinnedBuffer pinned(bytes);
  std::vector<char> pageable(bytes, 1);
  detail::StagedCopy staged;
  const auto copy = [&](void* to, const void* from, cudaMemcpyKind kind) {
    return [=] { SPIP_CUDA_CHECK(cudaMemcpy(to, from, bytes, kind)); };
  };
  LinkRates rates{};
  rates.pinned_up = best_rate(bytes, repeats, copy(on_device.get(), pinned.get(), cudaMemcpyHostToDevice));
  rates.pinned_down = best_rate(bytes, repeats, copy(pinned.get(), on_device.get(), cudaMemcpyDeviceToHost));
  rates.pageable_up = best_rate(bytes, repeats, copy(on_device.get(), pageable.data(), cudaMemcpyHostToDevice));
  rates.pageable_down = best_rate(bytes, repeats, copy(pageable.data(), on_device.get(), cudaMemcpyDeviceToHost));
  rates.staged_up = best_rate(bytes, repeats, [&] { staged.to_device(on_device.get(), pageable.data(), bytes, nullptr); });
  rates.staged_down = best_rate(bytes, repeats, [&] { staged.to_host(pageable.data(), on_device.get(), bytes, nullptr); });
  return rates;
}

double seconds_per_fft(int device, int grid_size, int batch, int repeats) {
  SPIP_CUDA_CHECK(cudaSetDevice(device));
  const long long cells = static_cast<long long>(grid_size) * grid_size;
  DeviceArray<cufftComplex> grids(static_cast<std::size_t>(cells * batch));
  SPIP_CUDA_CHECK(cudaMemset(grids.get(), 0, grids.bytes()));
  int n[2] = {grid_size, grid_size};
  cufftHandle plan = 0;
  SPIP_CUDA_CHECK(cufftPlanMany(&plan, 2, n, nullptr, 1, static_cast<int>(cells), nullptr, 1, static_cast<int>(cells),
                                CUFFT_C2C, batch));
  const double seconds = seconds_per_call(repeats, [&] {
    SPIP_CUDA_CHECK(cufftExecC2C(plan, grids.get(), grids.get(), CUFFT_FORWARD));
  });
  cufftDestroy(plan);
  return seconds / batch;
}

double seconds_per_cgemm(int device, int m, int n, int k, int repeats) {
  SPIP_CUDA_CHECK(cudaSetDevice(device));
  DeviceArray<cuComplex> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n),
      c(static_cast<std::size_t>(m) * n);
  SPIP_CUDA_CHECK(cudaMemset(a.get(), 0, a.bytes()));
  SPIP_CUDA_CHECK(cudaMemset(b.get(), 0, b.bytes()));
  const detail::CublasHandle blas;
  const cuComplex one = make_cuComplex(1, 0), zero = make_cuComplex(0, 0);
  return seconds_per_call(repeats, [&] {
    SPIP_CUDA_CHECK(
        detail::cublas().cgemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.get(), m, b.get(), k, &zero, c.get(), m));
  });
}

}  // namespace spip::cuda

namespace spip::cuda {

double fp32_peak_flops(int device) {
  int processors = 0, clock_khz = 0;
  SPIP_CUDA_CHECK(cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, device));
  SPIP_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  constexpr double fp32_lanes_per_processor = 128;  // Ampere, Hopper and Blackwell
  return 2.0 * fp32_lanes_per_processor * processors * clock_khz * 1e3;
}

}  // namespace spip::cuda
