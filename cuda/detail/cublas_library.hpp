#pragma once
// cuBLAS opened on first use instead of linked: loading it makes 150 MB of every
// process resident at start (libcublasLt's static initialisation), CPU ranks included,
// which never call it, and that is a quarter of a 0.6 GB memory budget.
#include <cublas_v2.h>

namespace spip::cuda::detail {

// The cuBLAS functions spip calls (those cublas_v2.h names cublasCreate, ...).
struct Cublas {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasCgemm_v2) cgemm;
};

// Opens the library on the first call; throws an Error naming it where it cannot.
const Cublas& cublas();

// RAII handle of the opened library.
class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace spip::cuda::detail
