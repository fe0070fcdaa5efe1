#include <dlfcn.h>

#include <string>

#include "detail/cublas_library.hpp"
#include "detail/cuda_check.hpp"
#include "spip/cuda/device.hpp"

namespace spip::cuda::detail {
namespace {

#define SPIP_STRING(x) #x
#define SPIP_SONAME(major) "libcublas.so." SPIP_STRING(major)

template <class Function>
Function symbol(void* library, const char* name) {
  void* address = ::dlsym(library, name);
  if (!address) {
    ::dlclose(library);
    SPIP_THROW(Error, std::string("cuBLAS: ") + SPIP_SONAME(CUBLAS_VER_MAJOR) + " has no " + name);
  }
  return reinterpret_cast<Function>(address);
}

// The soname of the major version the headers are of, found as the loader finds
// libcudart (spip's RUNPATH, LD_LIBRARY_PATH, ld.so.cache); never closed.
Cublas open_cublas() {
  void* library = ::dlopen(SPIP_SONAME(CUBLAS_VER_MAJOR), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = ::dlerror();
    SPIP_THROW(Error, std::string("cannot open cuBLAS (") + SPIP_SONAME(CUBLAS_VER_MAJOR) +
                          "), which the GPU Faraday stage needs: " + (why ? why : "unknown error") +
                          "; add the CUDA toolkit's lib64 to LD_LIBRARY_PATH, or run with parallel.device cpu");
  }
  return {symbol<decltype(&cublasCreate_v2)>(library, "cublasCreate_v2"),
          symbol<decltype(&cublasDestroy_v2)>(library, "cublasDestroy_v2"),
          symbol<decltype(&cublasCgemm_v2)>(library, "cublasCgemm_v2")};
}

}  // namespace

const Cublas& cublas() {
  static const Cublas functions = open_cublas();
  return functions;
}

CublasHandle::CublasHandle() { SPIP_CUDA_CHECK(cublas().create(&handle_)); }

CublasHandle::~CublasHandle() { cublas().destroy(handle_); }

}  // namespace spip::cuda::detail

namespace spip::cuda {

void require_cublas() { detail::cublas(); }

}  // namespace spip::cuda
