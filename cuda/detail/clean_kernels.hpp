#pragma once
// The Hogbom minor cycle on the device: a CUB arg-max over the peak-search values,
// one thread that takes the component, and a kernel that subtracts the shifted PSF.
// The host only reads the state every few iterations to see whether it stopped.
#include <cuda_runtime.h>

#include <cstddef>

#include "spip/config/config.hpp"

namespace spip::cuda::detail {

struct MinorCycleState {
  long long pixel;     // where the last component was taken
  float flux[4];       // its flux per Stokes parameter
  int iterations;
  int max_iterations;
  int done;            // set once the peak falls to the stop level or the iterations run out
};

class MinorCycle {
 public:
  explicit MinorCycle(long long pixels);
  ~MinorCycle();
  MinorCycle(const MinorCycle&) = delete;
  MinorCycle& operator=(const MinorCycle&) = delete;

  // The peak-search value (Jy/beam) of the residuals [4][pixels]; synchronises.
  double peak(PeakSearch search, const float* residual, cudaStream_t stream);
  // Hogbom iterations as deconv::hogbom(); returns the iterations done.
  int run(PeakSearch search, float* residual, const float* psf, int size, double gain, double stop_level,
          int max_iterations, float* model, cudaStream_t stream);

 private:
  void enqueue_search(PeakSearch search, const float* residual, cudaStream_t stream);
  long long pixels_;
  float* values_ = nullptr;       // search values
  float* best_value_ = nullptr;   // arg-max outputs
  long long* best_pixel_ = nullptr;
  void* scratch_ = nullptr;       // CUB temporary storage
  std::size_t scratch_bytes_ = 0;
  MinorCycleState* state_ = nullptr;
  MinorCycleState* host_state_ = nullptr;  // pinned
  float* host_best_ = nullptr;             // pinned
};

}  // namespace spip::cuda::detail
