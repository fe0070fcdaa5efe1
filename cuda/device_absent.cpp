#include "spip/cuda/device.hpp"

namespace spip::cuda {

DeviceProbe probe_devices() {
  DeviceProbe probe;
  probe.reason = "spip was built without the CUDA backend (SPIP_CUDA=OFF)";
  return probe;
}

bool self_test(int, std::string& error) {
  error = "spip was built without the CUDA backend";
  return false;
}

}  // namespace spip::cuda
