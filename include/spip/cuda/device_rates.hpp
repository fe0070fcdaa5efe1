#pragma once
// Reference rates of the device's own libraries, for benchmarks to set spip's figures
// against. No CUDA types cross this header.
namespace spip::cuda {

// Seconds per cuFFT C2C transform of a grid_size^2 grid (batches of `batch`, timed
// with CUDA events over `repeats` executions after a warm-up).
double seconds_per_fft(int device, int grid_size, int batch, int repeats);

// Seconds per cublasCgemm of an m x k by k x n product (events, after a warm-up).
double seconds_per_cgemm(int device, int m, int n, int k, int repeats);
// FP32 fused multiply-adds per second at the boost clock, as two flops each: 128 lanes
// per multiprocessor.
double fp32_peak_flops(int device);

}  // namespace spip::cuda
