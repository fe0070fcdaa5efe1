#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "spip/cuda/device.hpp"

namespace spip::cuda {
namespace {

__global__ void scale_kernel(float* values, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) values[i] *= factor;
}

std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

}  // namespace

DeviceProbe probe_devices() {
  DeviceProbe probe;
  probe.backend_built = true;
  int count = 0;
  // Without a driver this returns cudaErrorInsufficientDriver, not zero devices.
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    probe.reason = "cudaGetDeviceCount: " + describe(status);
    cudaGetLastError();
    return probe;
  }
  if (count == 0) {
    probe.reason = "no CUDA device is visible";
    return probe;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    const int pci_address = (prop.pciDomainID & 0xffff) << 13 | (prop.pciBusID & 0xff) << 5 | (prop.pciDeviceID & 0x1f);
    probe.devices.push_back(DeviceInfo{d, prop.name, prop.totalGlobalMem, prop.major, prop.minor, pci_address});
  }
  return probe;
}

std::size_t free_memory_bytes(int device) {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

bool self_test(int device, std::string& error) {
  constexpr int n = 1024;
  float host[n];
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  float* values = nullptr;
  cudaError_t status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaMalloc(&values, n * sizeof(float));
  if (status == cudaSuccess) status = cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice);
  if (status == cudaSuccess) {
    scale_kernel<<<(n + 255) / 256, 256>>>(values, n, 2.0f);
    status = cudaGetLastError();
  }
  if (status == cudaSuccess) status = cudaMemcpy(host, values, sizeof host, cudaMemcpyDeviceToHost);
  if (values) cudaFree(values);
  if (status != cudaSuccess) {
    error = describe(status);
    return false;
  }
  for (int i = 0; i < n; ++i) {
    if (host[i] != 2.0f * static_cast<float>(i)) {
      error = "self-test kernel returned wrong values";
      return false;
    }
  }
  return true;
}

}  // namespace spip::cuda
