#include "spip/cuda/device.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/error.hpp"

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

std::size_t synthesis_bytes(int num_phi, int num_chan, int num_pixels) {
  return (static_cast<std::size_t>(num_phi) * num_chan + static_cast<std::size_t>(num_chan) * num_pixels +
          static_cast<std::size_t>(num_phi) * num_pixels) * sizeof(std::complex<float>);
}

void synthesise(int, const std::complex<float>*, int, int, const std::complex<float>*, int, std::complex<float>*) {
  SPIP_THROW(Error, "spip was built without the CUDA backend");
}

}  // namespace spip::cuda
