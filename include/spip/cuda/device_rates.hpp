#pragma once
// Reference rates of the device's own libraries, for benchmarks to set spip's figures
// against. No CUDA types cross this header.
#include <cstddef>

namespace spip::cuda {

// Bytes per second of one copy of `bytes` between the host and the device, each way
// ("up" to the device): from page-locked memory (the link's own rate), from pageable
// memory (the driver's staging) and through spip's staged copy (detail/staged_copy.hpp),
// the best of `repeats` host-timed copies after a warm-up.
struct LinkRates {
  double pinned_up, pinned_down, pageable_up, pageable_down, staged_up, staged_down;
};
LinkRates link_rates(int device, std::size_t bytes, int repeats);

// Seconds per cuFFT C2C transform of a grid_size^2 grid (batches of `batch`, timed
// with CUDA events over `repeats` executions after a warm-up).
double seconds_per_fft(int device, int grid_size, int batch, int repeats);

// Seconds per cublasCgemm of an m x k by k x n product (events, after a warm-up).
double seconds_per_cgemm(int device, int m, int n, int k, int repeats);
// FP32 fused multiply-adds per second at the boost clock, as two flops each: 128 lanes
// per multiprocessor.
double fp32_peak_flops(int device);

}  // namespace spip::cuda
