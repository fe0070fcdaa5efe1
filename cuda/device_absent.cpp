#include "spip/cuda/device_imager.hpp"
#include "spip/cuda/device.hpp"
#include "spip/cuda/device_rates.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/cuda/scale_convolver.hpp"
#include "spip/error.hpp"

namespace spip::cuda {

DeviceProbe probe_devices() {
  DeviceProbe probe;
  probe.reason = "spip was built without the CUDA backend (SPIP_CUDA=OFF)";
  return probe;
}

std::size_t free_memory_bytes(int) { return 0; }

void require_cublas() {}

bool self_test(int, std::string& error) {
  error = "spip was built without the CUDA backend";
  return false;
}

std::size_t synthesis_bytes(int num_phi, int num_chan, int num_pixels) {
  return (static_cast<std::size_t>(num_phi) * num_chan + static_cast<std::size_t>(num_chan) * num_pixels +
          static_cast<std::size_t>(num_phi) * num_pixels) * sizeof(std::complex<float>);
}

std::size_t slab_bytes(int, int, int) { return 0; }

void synthesise(int, const std::complex<float>*, int, int, const std::complex<float>*, int, std::complex<float>*) {
  SPIP_THROW(Error, "spip was built without the CUDA backend");
}

faraday::SlabSpectra clean_slab(int, std::vector<std::complex<float>>, int, const std::vector<std::complex<float>>&,
                                const faraday::SpectrumSettings&, const std::vector<float>&) {
  SPIP_THROW(Error, "spip was built without the CUDA backend");
}

faraday::SlabSpectra synthesise_slab(int, const std::vector<std::complex<float>>&, int, const std::complex<float>*, int,
                                     const std::vector<std::complex<float>>&, const faraday::SpectrumSettings&,
                                     const std::vector<float>&, faraday::SlabCubes) {
  SPIP_THROW(Error, "spip was built without the CUDA backend");
}

LinkRates link_rates(int, std::size_t, int) { SPIP_THROW(Error, "spip was built without the CUDA backend"); }
double seconds_per_fft(int, int, int, int) { SPIP_THROW(Error, "spip was built without the CUDA backend"); }
double seconds_per_cgemm(int, int, int, int, int) { SPIP_THROW(Error, "spip was built without the CUDA backend"); }
double fp32_peak_flops(int) { SPIP_THROW(Error, "spip was built without the CUDA backend"); }

// Without the backend no DeviceImager can be made; the pipeline never asks for one
// because probe_devices() reports no device.
struct DeviceImager::Impl {};

std::size_t DeviceImager::device_bytes(const imaging::ImageGeometry&, std::size_t, const imaging::WeightingScheme&) {
  return 0;
}
DeviceImager::DeviceImager(int, const imaging::ImageGeometry&, double, bool, std::size_t,
                             const imaging::WeightingScheme&, const imaging::RowGroup*, int) {
  SPIP_THROW(Error, "spip was built without the CUDA backend");
}
DeviceImager::~DeviceImager() = default;
ChannelView DeviceImager::staging_area(std::size_t) { return {}; }
void DeviceImager::upload(double) {}
void DeviceImager::next() {}
double DeviceImager::weight_sum(int) const { return 0; }
int DeviceImager::num_w_planes() const { return 0; }
std::unique_ptr<deconv::CleanBackend> DeviceImager::clean_backend() {
  SPIP_THROW(Error, "spip was built without the CUDA backend");
}
TransferStats DeviceImager::transfer_stats() const { return {}; }
KernelTimes DeviceImager::time_kernels() { return {}; }

std::unique_ptr<deconv::Convolver> make_scale_convolver(int, int, int) {
  SPIP_THROW(Error, "spip was built without the CUDA backend");
}

}  // namespace spip::cuda
