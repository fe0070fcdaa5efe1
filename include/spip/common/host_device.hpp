#pragma once
// Marks per-element math that both the host compiler and nvcc compile, so the CPU
// tests exercise exactly the arithmetic the GPU kernels run.
#if defined(__CUDACC__)
#define SPIP_HOST_DEVICE __host__ __device__
#else
#define SPIP_HOST_DEVICE
#endif
