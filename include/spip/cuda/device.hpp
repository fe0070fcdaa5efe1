#pragma once
// Host-side view of the CUDA backend: no CUDA types cross this header, so the
// rest of spip compiles without the toolkit.
#include <string>
#include <vector>

namespace spip::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::size_t memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
  // PCI domain, bus and device in one non-negative number: the same GPU for every
  // rank, whatever index its CUDA_VISIBLE_DEVICES gives the GPU.
  int pci_address = 0;
};

struct DeviceProbe {
  bool backend_built = false;        // spip was compiled with SPIP_CUDA on
  std::vector<DeviceInfo> devices;   // usable devices (after CUDA_VISIBLE_DEVICES)
  std::string reason;                // why there are none, when there are none
};

// Lists usable devices. Never throws: a machine without a driver or a GPU gives
// an empty list and the reason.
DeviceProbe probe_devices();

// Free memory on `device` now (0 if it cannot be queried).
std::size_t free_memory_bytes(int device);

// Opens cuBLAS, which the GPU Faraday stage needs, so that a GPU rank without it stops
// at the start rather than after its imaging (it is opened when first used, not
// linked); throws an Error naming the library.
void require_cublas();

// Runs a small kernel on `device` and checks its result; false with `error` set if
// the device cannot run spip's kernels.
bool self_test(int device, std::string& error);

}  // namespace spip::cuda
