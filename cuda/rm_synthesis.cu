#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "spip/cuda/rm_synthesis.hpp"
#include "spip/error.hpp"

namespace spip::cuda {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    SPIP_THROW(Error, std::string("CUDA ") + what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    SPIP_THROW(Error, std::string("cuBLAS ") + what + ": status " + std::to_string(static_cast<int>(status)));
}

// Device buffer freed on every path.
struct DeviceBuffer {
  void* data = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { check(cudaMalloc(&data, bytes), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  cuComplex* complex() const { return static_cast<cuComplex*>(data); }
};

struct Handle {
  cublasHandle_t handle = nullptr;
  Handle() { check(cublasCreate(&handle), "cublasCreate"); }
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
  check(cudaSetDevice(device), "cudaSetDevice");
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const std::size_t needed = synthesis_bytes(num_phi, num_chan, num_pixels);
  if (needed > free_bytes)
    SPIP_THROW(Error, "RM synthesis of " + std::to_string(num_pixels) + " pixels x " + std::to_string(num_phi) +
                          " depths needs " + std::to_string(needed >> 20) + " MiB on GPU " + std::to_string(device) +
                          " but " + std::to_string(free_bytes >> 20) +
                          " MiB are free; use more ranks (smaller pixel slabs) or fewer depths (faraday.dphi)");
  const std::size_t a_size = static_cast<std::size_t>(num_phi) * num_chan;
  const std::size_t p_size = static_cast<std::size_t>(num_chan) * num_pixels;
  const std::size_t f_size = static_cast<std::size_t>(num_phi) * num_pixels;
  DeviceBuffer da(a_size * sizeof(cuComplex)), dp(p_size * sizeof(cuComplex)), df(f_size * sizeof(cuComplex));
  check(cudaMemcpy(da.data, a, a_size * sizeof(cuComplex), cudaMemcpyHostToDevice), "upload A");
  check(cudaMemcpy(dp.data, p, p_size * sizeof(cuComplex), cudaMemcpyHostToDevice), "upload P");
  Handle blas;
  const cuComplex one = make_cuComplex(1.0f, 0.0f), zero = make_cuComplex(0.0f, 0.0f);
  // Row-major F = A P is column-major F^T = P^T A^T: m = pixels, n = depths, k = channels.
  check(cublasCgemm(blas.handle, CUBLAS_OP_N, CUBLAS_OP_N, num_pixels, num_phi, num_chan, &one, dp.complex(),
                    num_pixels, da.complex(), num_chan, &zero, df.complex(), num_pixels),
        "cublasCgemm");
  check(cudaMemcpy(f, df.data, f_size * sizeof(cuComplex), cudaMemcpyDeviceToHost), "download F");
}

}  // namespace spip::cuda
