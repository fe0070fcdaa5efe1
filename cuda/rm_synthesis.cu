#include <string>

#include "detail/cublas_library.hpp"
#include "detail/cuda_check.hpp"
#include "detail/staged_copy.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/faraday/spectrum_math.hpp"

namespace spip::cuda {
namespace {

using detail::blocks_for;
using detail::DeviceArray;
using detail::StagedCopy;
using faraday::Sample;
using faraday::Spectrum;

constexpr int threads_per_block = 128;

void require_free(int device, std::size_t needed, int num_phi, int num_pixels) {
  SPIP_CUDA_CHECK(cudaSetDevice(device));
  std::size_t free_bytes = 0, total_bytes = 0;
  SPIP_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (needed > free_bytes)
    SPIP_THROW(Error, "RM synthesis of " + std::to_string(num_pixels) + " pixels x " + std::to_string(num_phi) +
                          " depths needs " + std::to_string(needed >> 20) + " MiB on GPU " + std::to_string(device) +
                          " but " + std::to_string(free_bytes >> 20) +
                          " MiB are free; use more ranks (smaller pixel slabs) or fewer depths (faraday.dphi)");
}

// Row-major F = A P is column-major F^T = P^T A^T: m = pixels, n = depths, k = channels.
void multiply(const DeviceArray<Sample>& a, const DeviceArray<Sample>& p, int num_phi, int num_chan, int num_pixels,
              DeviceArray<Sample>& f) {
  const detail::CublasHandle blas;
  const cuComplex one = make_cuComplex(1.0f, 0.0f), zero = make_cuComplex(0.0f, 0.0f);
  SPIP_CUDA_CHECK(detail::cublas().cgemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, num_pixels, num_phi, num_chan, &one,
                              reinterpret_cast<const cuComplex*>(p.get()), num_pixels,
                              reinterpret_cast<const cuComplex*>(a.get()), num_chan, &zero,
                              reinterpret_cast<cuComplex*>(f.get()), num_pixels));
}

// Through `staged`, on the legacy default stream, as are the kernels and cuBLAS.
DeviceArray<Sample> upload(const std::complex<float>* values, std::size_t count, StagedCopy& staged) {
  DeviceArray<Sample> device(count);
  staged.to_device(device.get(), values, device.bytes(), nullptr);
  return device;
}

template <class T, class D>
void download(const DeviceArray<D>& device, std::vector<T>& host, StagedCopy& staged) {
  static_assert(sizeof(T) == sizeof(D));
  host.resize(device.size());
  staged.to_host(host.data(), device.get(), device.bytes(), nullptr);
}

// One thread per pixel: the neighbouring threads of a warp read neighbouring pixels of
// each depth plane, and the pixels' loops are independent.
__global__ void clean_spectra_kernel(Sample* residual, Sample* model, Sample* clean, int num_pixels,
                                     const Sample* rmsf_double, faraday::SpectrumSettings settings,
                                     const float* pixel_sigmas, int* iterations) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= num_pixels) return;
  const int num_phi = settings.axis.count;
  const double sigma = faraday::pixel_sigma(settings.sigma, pixel_sigmas, x);
  iterations[x] = faraday::rm_clean_spectrum(Spectrum<Sample>(residual + x, num_pixels), num_phi, rmsf_double,
                                             faraday::pixel_control(settings.clean, settings.sigma, sigma),
                                             Spectrum<Sample>(model + x, num_pixels));
  faraday::restore_spectrum(Spectrum<const Sample>(residual + x, num_pixels),
                            Spectrum<const Sample>(model + x, num_pixels), num_phi, settings.axis.dphi, settings.fwhm,
                            Spectrum<Sample>(clean + x, num_pixels));
}

// `scratch` (the residual cube, spent once the spectra are restored) holds each pixel's
// values for the measured noise's medians.
__global__ void fit_peaks_kernel(const Sample* clean, const Sample* model, const int* iterations, int num_pixels,
                                 faraday::SpectrumSettings settings, const float* pixel_sigmas, Sample* scratch,
                                 float* maps) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= num_pixels) return;
  const double sigma = faraday::pixel_sigma(settings.sigma, pixel_sigmas, x);
  const faraday::PeakFit fit = faraday::fit_spectrum_peak(Spectrum<const Sample>(clean + x, num_pixels), settings.axis,
                                                          settings.lambda0_sq, settings.fwhm, sigma,
                                                          settings.chi0_lever);
  const double m2 = faraday::component_spread(Spectrum<const Sample>(model + x, num_pixels), settings.axis);
  const double fdf_noise = faraday::pixel_fdf_noise(fit, Spectrum<const Sample>(clean + x, num_pixels), settings.axis,
                                                    settings.fwhm, Spectrum<Sample>(scratch + x, num_pixels));
  for (int m = 0; m < faraday::pixel_map_count; ++m)
    maps[static_cast<long long>(m) * num_pixels + x] =
        static_cast<float>(faraday::pixel_map_value(fit, m2, fdf_noise, iterations[x], m));
}

}  // namespace

std::size_t synthesis_bytes(int num_phi, int num_chan, int num_pixels) {
  const std::size_t values = static_cast<std::size_t>(num_phi) * num_chan +
                             static_cast<std::size_t>(num_chan) * num_pixels +
                             static_cast<std::size_t>(num_phi) * num_pixels;
  return values * sizeof(Sample);
}

std::size_t slab_bytes(int num_phi, int num_chan, int num_pixels) {
  const std::size_t cube = static_cast<std::size_t>(num_phi) * num_pixels * sizeof(Sample);
  return synthesis_bytes(num_phi, num_chan, num_pixels) + 3 * cube + (2 * num_phi - 1) * sizeof(Sample) +
         static_cast<std::size_t>(num_pixels) * (faraday::pixel_map_count * sizeof(float) + sizeof(float) + sizeof(int));
}

void synthesise(int device, const std::complex<float>* a, int num_phi, int num_chan, const std::complex<float>* p,
                int num_pixels, std::complex<float>* f) {
  require_free(device, synthesis_bytes(num_phi, num_chan, num_pixels), num_phi, num_pixels);
  StagedCopy staged;
  const DeviceArray<Sample> da = upload(a, static_cast<std::size_t>(num_phi) * num_chan, staged);
  const DeviceArray<Sample> dp = upload(p, static_cast<std::size_t>(num_chan) * num_pixels, staged);
  DeviceArray<Sample> df(static_cast<std::size_t>(num_phi) * num_pixels);
  multiply(da, dp, num_phi, num_chan, num_pixels, df);
  if (f)
    staged.to_host(f, df.get(), df.bytes(), nullptr);
  else
    SPIP_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

namespace {

// RM-CLEAN and the peak fit of the dirty cube on the device into `slab` (whose dirty
// spectra the caller sets, or leaves empty where the run does not keep them); the clean
// cube comes back only with `keep_clean`.
void clean_on_device(const DeviceArray<Sample>& dirty, int num_pixels, const std::vector<std::complex<float>>& rmsf_double,
                     const faraday::SpectrumSettings& settings, const std::vector<float>& pixel_sigmas,
                     bool keep_clean, StagedCopy& staged, faraday::SlabSpectra& slab) {
  const std::size_t cube = dirty.size();
  DeviceArray<Sample> residual(cube), model(cube), clean(cube);
  SPIP_CUDA_CHECK(cudaMemcpy(residual.get(), dirty.get(), dirty.bytes(), cudaMemcpyDeviceToDevice));
  SPIP_CUDA_CHECK(cudaMemset(model.get(), 0, model.bytes()));
  const DeviceArray<Sample> rmsf = upload(rmsf_double.data(), rmsf_double.size(), staged);
  DeviceArray<float> sigmas(pixel_sigmas.size());
  if (!pixel_sigmas.empty())
    SPIP_CUDA_CHECK(cudaMemcpy(sigmas.get(), pixel_sigmas.data(), sigmas.bytes(), cudaMemcpyHostToDevice));
  const float* sigma_values = pixel_sigmas.empty() ? nullptr : sigmas.get();
  DeviceArray<int> iterations(static_cast<std::size_t>(num_pixels));
  DeviceArray<float> maps(static_cast<std::size_t>(faraday::pixel_map_count) * num_pixels);
  const unsigned blocks = blocks_for(num_pixels, threads_per_block);
  clean_spectra_kernel<<<blocks, threads_per_block>>>(residual.get(), model.get(), clean.get(), num_pixels, rmsf.get(),
                                                      settings, sigma_values, iterations.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
  fit_peaks_kernel<<<blocks, threads_per_block>>>(clean.get(), model.get(), iterations.get(), num_pixels, settings,
                                                  sigma_values, residual.get(), maps.get());
  SPIP_CUDA_CHECK(cudaGetLastError());

  if (keep_clean) download(clean, slab.clean, staged);
  download(maps, slab.maps, staged);
  std::vector<int> counts(static_cast<std::size_t>(num_pixels));
  SPIP_CUDA_CHECK(cudaMemcpy(counts.data(), iterations.get(), iterations.bytes(), cudaMemcpyDeviceToHost));
  slab.iterations = 0;
  for (int n : counts) slab.iterations += n;
}

}  // namespace

faraday::SlabSpectra clean_slab(int device, std::vector<std::complex<float>> dirty, int num_pixels,
                                const std::vector<std::complex<float>>& rmsf_double,
                                const faraday::SpectrumSettings& settings, const std::vector<float>& pixel_sigmas) {
  if (num_pixels == 0) return {};
  const int num_phi = settings.axis.count;
  require_free(device, slab_bytes(num_phi, 0, num_pixels), num_phi, num_pixels);
  StagedCopy staged;
  const DeviceArray<Sample> device_dirty = upload(dirty.data(), dirty.size(), staged);
  faraday::SlabSpectra slab;
  slab.dirty = std::move(dirty);
  clean_on_device(device_dirty, num_pixels, rmsf_double, settings, pixel_sigmas, true, staged, slab);
  return slab;
}

faraday::SlabSpectra synthesise_slab(int device, const std::vector<std::complex<float>>& a, int num_chan,
                                     const std::complex<float>* p, int num_pixels,
                                     const std::vector<std::complex<float>>& rmsf_double,
                                     const faraday::SpectrumSettings& settings, const std::vector<float>& pixel_sigmas,
                                     faraday::SlabCubes kept) {
  if (num_pixels == 0) return {};
  const int num_phi = settings.axis.count;
  require_free(device, slab_bytes(num_phi, num_chan, num_pixels), num_phi, num_pixels);
  StagedCopy staged;
  DeviceArray<Sample> dirty(static_cast<std::size_t>(num_phi) * num_pixels);
  {
    const DeviceArray<Sample> da = upload(a.data(), a.size(), staged);
    const DeviceArray<Sample> dp = upload(p, static_cast<std::size_t>(num_chan) * num_pixels, staged);
    multiply(da, dp, num_phi, num_chan, num_pixels, dirty);
  }
  faraday::SlabSpectra slab;
  if (kept.dirty) download(dirty, slab.dirty, staged);
  clean_on_device(dirty, num_pixels, rmsf_double, settings, pixel_sigmas, kept.clean, staged, slab);
  return slab;
}

}  // namespace spip::cuda
