#include <string>

#include "detail/cuda_check.hpp"
#include "spip/cuda/rm_synthesis.hpp"

namespace spip::cuda {
namespace {

using detail::DeviceArray;

struct Handle {
  cublasHandle_t handle = nullptr;
  Handle() { SPIP_CUDA_CHECK(cublasCreate(&handle)); }
  ~Handle() { cublasDestroy(handle); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

}  // namespace

std::size_t synthesis_bytes(int num_phi, int num_chan, int num_pixels) {
  const std::size_t values = static_cast<std::size_t>(num_phi) * num_chan +
                             static_cast<std::size_t>(num_chan) * num_pixels +
                             static_cast<std::size_t>(num_phi) * num_pixels;
  return values * sizeof(cuComplex);
}

void synthesise(int device, const std::complex<float>* a, int num_phi, int num_chan, const std::complex<float>* p,
                int num_pixels, std::complex<float>* f) {
  SPIP_CUDA_CHECK(cudaSetDevice(device));
  std::size_t free_bytes = 0, total_bytes = 0;
  SPIP_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t needed = synthesis_bytes(num_phi, num_chan, num_pixels);
  if (needed > free_bytes)
    SPIP_THROW(Error, "RM synthesis of " + std::to_string(num_pixels) + " pixels x " + std::to_string(num_phi) +
                          " depths needs " + std::to_string(needed >> 20) + " MiB on GPU " + std::to_string(device) +
                          " but " + std::to_string(free_bytes >> 20) +
                          " MiB are free; use more ranks (smaller pixel slabs) or fewer depths (faraday.dphi)");
  const std::size_t a_size = static_cast<std::size_t>(num_phi) * num_chan;
  const std::size_t p_size = static_cast<std::size_t>(num_chan) * num_pixels;
  const std::size_t f_size = static_cast<std::size_t>(num_phi) * num_pixels;
  DeviceArray<cuComplex> da(a_size), dp(p_size), df(f_size);
  SPIP_CUDA_CHECK(cudaMemcpy(da.get(), a, da.bytes(), cudaMemcpyHostToDevice));
  SPIP_CUDA_CHECK(cudaMemcpy(dp.get(), p, dp.bytes(), cudaMemcpyHostToDevice));
  Handle blas;
  const cuComplex one = make_cuComplex(1.0f, 0.0f), zero = make_cuComplex(0.0f, 0.0f);
  // Row-major F = A P is column-major F^T = P^T A^T: m = pixels, n = depths, k = channels.
  SPIP_CUDA_CHECK(cublasCgemm(blas.handle, CUBLAS_OP_N, CUBLAS_OP_N, num_pixels, num_phi, num_chan, &one, dp.get(),
                              num_pixels, da.get(), num_chan, &zero, df.get(), num_pixels));
  SPIP_CUDA_CHECK(cudaMemcpy(f, df.get(), df.bytes(), cudaMemcpyDeviceToHost));
}

}  // namespace spip::cuda
